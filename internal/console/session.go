package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Cookie names.
const (
	sessionCookie = "claw_console"
	loginCookie   = "claw_console_login"
)

// maxSessions bounds the sessions kept: past it the oldest goes.
const maxSessions = 1024

// maxFormBytes bounds a form's body.
const maxFormBytes = 64 << 10

type session struct {
	id      string // shown in logs and decisions: a prefix of the hash
	csrf    string
	expires time.Time
}

func (s *session) checkCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) == 1
}

// sessions are kept by the hash of their cookie: a lookup's timing says
// nothing of a cookie's value.
type sessions struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[[32]byte]*session
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, now: now, m: map[[32]byte]*session{}}
}

func random() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// create starts a session and returns its cookie value.
func (ss *sessions) create() (string, *session) {
	v := random()
	h := sha256.Sum256([]byte(v))
	s := &session{id: hex.EncodeToString(h[:4]), csrf: random(), expires: ss.now().Add(ss.ttl)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	for k, o := range ss.m {
		if now.After(o.expires) {
			delete(ss.m, k)
		}
	}
	for len(ss.m) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for k, o := range ss.m {
			if at.IsZero() || o.expires.Before(at) {
				oldest, at = k, o.expires
			}
		}
		delete(ss.m, oldest)
	}
	ss.m[h] = s
	return v, s
}

func (ss *sessions) get(r *http.Request) (*session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) != 64 {
		return nil, false
	}
	h := sha256.Sum256([]byte(c.Value))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[h]
	if !ok {
		return nil, false
	}
	if ss.now().After(s.expires) {
		delete(ss.m, h)
		return nil, false
	}
	return s, true
}

func (ss *sessions) end(r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		h := sha256.Sum256([]byte(c.Value))
		ss.mu.Lock()
		delete(ss.m, h)
		ss.mu.Unlock()
	}
}

func cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

// loginPage shows the login form, with a CSRF token bound to a cookie of
// its own (double submit): there is no session yet.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.renderLogin(w, r, http.StatusOK, "")
}

func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, problem string) {
	tok := random()
	http.SetCookie(w, cookie(r, loginCookie, tok, 600))
	c.render(w, status, "login", &view{Title: "Log in", Pod: c.opts.Pod, CSRF: tok, Data: problem})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	lc, err := r.Cookie(loginCookie)
	form := r.PostForm.Get("csrf")
	if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(form), []byte(lc.Value)) != 1 {
		http.Error(w, "the login form's CSRF token is missing or stale: reload the login page", http.StatusForbidden)
		return
	}
	key, now := clientKey(r), c.opts.Now()
	if wait, global, ok := c.limiter.allow(key, now); !ok {
		c.logLogin(LoginAttempt{Client: key, Outcome: LoginLimited, RetryAfter: wait, Global: global})
		secs := retryAfterSeconds(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		c.renderLogin(w, r, http.StatusTooManyRequests, fmt.Sprintf("Too many failed logins: try again in %d seconds.", secs))
		return
	}
	if !c.opts.VerifyToken(r.PostForm.Get("token")) {
		n, wait := c.limiter.fail(key, now)
		c.logLogin(LoginAttempt{Client: key, Outcome: LoginRefused, Failures: n, RetryAfter: wait})
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
		}
		c.renderLogin(w, r, http.StatusUnauthorized, "That is not the operator token (agent tokens cannot log in). `claw console` prints the URL; the token is in .claw-auth/operator-token.")
		return
	}
	c.limiter.succeed(key, now, c.opts.SessionTTL)
	c.logLogin(LoginAttempt{Client: key, Outcome: LoginOK})
	v, _ := c.sessions.create()
	http.SetCookie(w, cookie(r, loginCookie, "", -1))
	http.SetCookie(w, cookie(r, sessionCookie, v, int(c.opts.SessionTTL/time.Second)))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, _ *session) {
	c.sessions.end(r)
	http.SetCookie(w, cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// page wraps a page handler: a browser without a session is sent to log
// in; a POST without the session's CSRF token is refused.
func (c *Console) page(f func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.sessions.get(r)
		if !ok && c.opts.Bearer != nil && c.opts.Bearer(r) {
			s, ok = &session{id: "bearer"}, true
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				f(w, r, s) // a bearer token is no ambient credential: no CSRF
				return
			}
		}
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil || !s.checkCSRF(r.PostForm.Get("csrf")) {
				http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
				return
			}
		}
		f(w, r, s)
	}
}

// api wraps a data route (events, charts): no redirect, 401 without a
// session.
func (c *Console) api(f func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := c.sessions.get(r)
		if !ok && c.opts.Bearer != nil && c.opts.Bearer(r) {
			s, ok = &session{id: "bearer"}, true
		}
		if !ok {
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		f(w, r, s)
	}
}

// retryAfterSeconds is a wait as a Retry-After header counts it: whole
// seconds, rounded up, at least one.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

func (c *Console) logLogin(a LoginAttempt) {
	if c.opts.OnLogin != nil {
		c.opts.OnLogin(a)
	}
}
