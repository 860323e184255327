package console

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// The login form's limits on failed attempts (docs/console.md).
const (
	// freeFailures is how many wrong tokens one client address may send
	// before it has to wait.
	freeFailures = 5
	// firstLockout is the wait after the freeFailures-th failure; each
	// further failure doubles it, up to maxLockout.
	firstLockout = 2 * time.Second
	maxLockout   = 15 * time.Minute
	// forgetAfter drops an address's record this long after its last
	// failure (its wait over).
	forgetAfter = time.Hour
	// maxTracked bounds the addresses remembered; past it, new addresses
	// are held by the pod-wide limit alone.
	maxTracked = 4096
	// The pod-wide limit: at most globalBurst failures at once, refilled
	// at globalPerMinute a minute. While it is spent, only addresses that
	// logged in lately may try.
	globalBurst     = 100
	globalPerMinute = 60
	// maxKnown bounds the addresses remembered as having logged in.
	maxKnown = 1024
)

// Login outcomes, as LoginAttempt reports them.
const (
	LoginOK      = "ok"      // the operator token: a session started
	LoginRefused = "refused" // a wrong token
	LoginLimited = "limited" // refused unchecked: too many failures (429)
)

// LoginAttempt is one try at the login form, for the audit log. It never
// carries the token that was sent.
type LoginAttempt struct {
	// Client is the address the attempt came from, as the limit keys it
	// (an IPv6 address by its /64).
	Client  string
	Outcome string
	// Failures is the client's failures in a row, this one included.
	Failures int
	// RetryAfter is how long the client must wait before its next try
	// (limited, or a failure that started a wait).
	RetryAfter time.Duration
	// Global is set when the pod-wide limit refused the attempt.
	Global bool
}

type failures struct {
	n     int
	last  time.Time
	until time.Time // no attempt is checked before it
}

// loginLimiter refuses login attempts after too many failures, per client
// address and pod-wide, in bounded memory.
type loginLimiter struct {
	mu      sync.Mutex
	clients map[string]*failures
	known   map[string]time.Time // logged in successfully; until when remembered
	tokens  float64              // the pod-wide failures left
	filled  time.Time            // when tokens was last refilled
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{clients: map[string]*failures{}, known: map[string]time.Time{}, tokens: globalBurst}
}

// clientKey is the address an attempt came from: an IPv6 address by its
// /64 (one host usually holds the whole prefix). Forwarding headers are
// not trusted.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.WithZone("").Prefix(64)
		return p.String()
	}
	return a.String()
}

func (l *loginLimiter) refill(now time.Time) {
	if !l.filled.IsZero() && now.After(l.filled) {
		l.tokens += now.Sub(l.filled).Minutes() * globalPerMinute
		if l.tokens > globalBurst {
			l.tokens = globalBurst
		}
	}
	l.filled = now
}

// allow reports whether an attempt from key may be checked now; when not,
// how long to wait and whether the pod-wide limit is why.
func (l *loginLimiter) allow(key string, now time.Time) (wait time.Duration, global bool, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.clients[key]; f != nil && now.Before(f.until) {
		return f.until.Sub(now), false, false
	}
	l.refill(now)
	if l.tokens < 1 {
		if until, ok := l.known[key]; !ok || now.After(until) {
			return time.Duration((1 - l.tokens) / globalPerMinute * float64(time.Minute)), true, false
		}
	}
	return 0, false, true
}

// fail counts a wrong token from key and returns its failures in a row and
// the wait it now has.
func (l *loginLimiter) fail(key string, now time.Time) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(now)
	if l.tokens > 0 {
		l.tokens--
	}
	f := l.clients[key]
	if f == nil {
		if len(l.clients) >= maxTracked {
			l.pruneLocked(now)
		}
		if len(l.clients) >= maxTracked {
			return 1, 0 // held by the pod-wide limit alone
		}
		f = &failures{}
		l.clients[key] = f
	}
	if now.After(f.until) && now.Sub(f.last) > forgetAfter {
		f.n = 0 // an old streak is forgotten
	}
	f.n++
	f.last = now
	if f.n < freeFailures {
		return f.n, 0
	}
	wait := maxLockout
	if shift := f.n - freeFailures; shift < 20 {
		wait = min(firstLockout<<shift, maxLockout)
	}
	f.until = now.Add(wait)
	return f.n, wait
}

// succeed forgets key's failures and remembers it as an address the
// operator logs in from, for ttl.
func (l *loginLimiter) succeed(key string, now time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clients, key)
	if _, ok := l.known[key]; !ok && len(l.known) >= maxKnown {
		var oldest string
		var at time.Time
		for k, until := range l.known {
			if at.IsZero() || until.Before(at) {
				oldest, at = k, until
			}
		}
		delete(l.known, oldest)
	}
	l.known[key] = now.Add(ttl)
}

func (l *loginLimiter) pruneLocked(now time.Time) {
	for k, f := range l.clients {
		if now.After(f.until) && now.Sub(f.last) > forgetAfter {
			delete(l.clients, k)
		}
	}
	for k, until := range l.known {
		if now.After(until) {
			delete(l.known, k)
		}
	}
}
