package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// limitRig is a console whose clock the test moves, behind a listener
// that takes each request's client address from a test header (as if
// the requests came from several machines).
type limitRig struct {
	srv   *httptest.Server
	clock *testClock
	mu    sync.Mutex
	seen  []LoginAttempt
}

func newLimitRig(t *testing.T) *limitRig {
	t.Helper()
	lr := &limitRig{clock: &testClock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}}
	c, err := New(Options{Pod: "desk", Agents: pod, Now: lr.clock.now,
		VerifyToken: func(tok string) bool { return tok == operatorToken },
		OnLogin: func(a LoginAttempt) {
			lr.mu.Lock()
			lr.seen = append(lr.seen, a)
			lr.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	mux := testMux{http.NewServeMux()}
	c.Mount(mux)
	lr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("X-Test-Client"); a != "" {
			r.RemoteAddr = a
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(lr.srv.Close)
	return lr
}

// try sends token to the login form from addr and returns the status and
// the Retry-After header.
func (lr *limitRig) try(t *testing.T, addr, token string) (int, string) {
	t.Helper()
	c := client()
	req, _ := http.NewRequest(http.MethodGet, lr.srv.URL+"/login", nil)
	req.Header.Set("X-Test-Client", addr)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	m := csrfField.FindStringSubmatch(readAll(res))
	if m == nil {
		t.Fatal("login page without a CSRF token")
	}
	req, _ = http.NewRequest(http.MethodPost, lr.srv.URL+"/login", strings.NewReader(url.Values{"csrf": {m[1]}, "token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Test-Client", addr)
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(res)
	if res.StatusCode == http.StatusTooManyRequests && !strings.Contains(body, "Too many failed logins") {
		t.Fatalf("429 page says:\n%s", body)
	}
	return res.StatusCode, res.Header.Get("Retry-After")
}

func readAll(res *http.Response) string {
	defer res.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 16<<10)
	for {
		n, err := res.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}

// After a few wrong tokens from one address, its further attempts are
// refused unchecked (429, Retry-After), for an interval that grows with
// each failure; the operator logging in from elsewhere is not affected;
// the audit hears every attempt, never the token.
func TestFailedLoginsAreRateLimited(t *testing.T) {
	lr := newLimitRig(t)
	const attacker, operator = "203.0.113.7:40000", "198.51.100.2:50000"
	wrong := "wrong-token-guess-0123456789"
	for i := 1; i <= freeFailures; i++ {
		code, retry := lr.try(t, attacker, wrong)
		want := ""
		if i == freeFailures {
			want = "2"
		}
		if code != http.StatusUnauthorized || retry != want {
			t.Fatalf("failure %d: %d Retry-After %q, want 401 %q", i, code, retry, want)
		}
	}
	// Now even the right token is refused unchecked from that address...
	if code, retry := lr.try(t, attacker, operatorToken); code != http.StatusTooManyRequests || retry != "2" {
		t.Fatalf("while waiting: %d Retry-After %q, want 429 2", code, retry)
	}
	// ...while the operator elsewhere logs in.
	if code, _ := lr.try(t, operator, operatorToken); code != http.StatusSeeOther {
		t.Fatalf("the operator from another address: %d", code)
	}
	// Each further failure doubles the wait.
	for _, want := range []string{"4", "8", "16"} {
		lr.clock.add(time.Minute)
		if code, retry := lr.try(t, attacker, wrong); code != http.StatusUnauthorized || retry != want {
			t.Fatalf("after the wait: %d Retry-After %q, want 401 %s", code, retry, want)
		}
		if code, retry := lr.try(t, attacker, wrong); code != http.StatusTooManyRequests || retry != want {
			t.Fatalf("during the wait: %d Retry-After %q, want 429 %s", code, retry, want)
		}
	}
	// Waited out, the right token logs in and clears the streak.
	lr.clock.add(16 * time.Second)
	if code, _ := lr.try(t, attacker, operatorToken); code != http.StatusSeeOther {
		t.Fatalf("the right token after the wait: %d", code)
	}
	if code, retry := lr.try(t, attacker, wrong); code != http.StatusUnauthorized || retry != "" {
		t.Fatalf("a failure after a login: %d Retry-After %q (the streak starts again)", code, retry)
	}
	// An IPv6 client is one address per /64.
	for i := range freeFailures {
		lr.try(t, fmt.Sprintf("[2001:db8:1:2::%x]:443", i+1), wrong)
	}
	if code, _ := lr.try(t, "[2001:db8:1:2:ffff::9]:443", wrong); code != http.StatusTooManyRequests {
		t.Fatalf("another address of the same /64: %d, want 429", code)
	}

	lr.mu.Lock()
	defer lr.mu.Unlock()
	var outcomes []string
	for _, a := range lr.seen {
		if strings.Contains(fmt.Sprintf("%+v", a), wrong) || strings.Contains(fmt.Sprintf("%+v", a), operatorToken) {
			t.Fatalf("a login attempt's record holds the token: %+v", a)
		}
		if a.Client == "203.0.113.7" {
			outcomes = append(outcomes, a.Outcome)
		}
	}
	want := "refused refused refused refused refused limited refused limited refused limited refused limited ok refused"
	if strings.Join(outcomes, " ") != want {
		t.Fatalf("attempts heard: %s\nwant %s", strings.Join(outcomes, " "), want)
	}
	if last := lr.seen[len(lr.seen)-1]; last.Client != "2001:db8:1:2::/64" || last.Outcome != LoginLimited {
		t.Fatalf("the IPv6 attempt heard as %+v", last)
	}
}

// Pod-wide: failures from many addresses spend one budget; while it is
// spent only addresses that logged in lately may try, and it refills.
// The addresses remembered stay bounded.
func TestFailedLoginsPodWideAndBounded(t *testing.T) {
	l := newLoginLimiter()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	l.succeed("198.51.100.2", now, time.Hour)
	for i := range globalBurst {
		key := fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		if _, _, ok := l.allow(key, now); !ok {
			t.Fatalf("address %d refused before the pod-wide budget was spent", i)
		}
		l.fail(key, now)
	}
	wait, global, ok := l.allow("10.9.9.9", now)
	if ok || !global || wait != time.Second {
		t.Fatalf("a fresh address once the budget is spent: ok=%v global=%v wait=%v, want refused for 1s", ok, global, wait)
	}
	if _, _, ok := l.allow("198.51.100.2", now); !ok {
		t.Fatal("the operator's address was refused by the pod-wide limit")
	}
	if _, _, ok := l.allow("10.9.9.9", now.Add(time.Second)); !ok {
		t.Fatal("the budget did not refill")
	}
	// Many more addresses than are tracked: memory stays bounded.
	for i := range 3 * maxTracked {
		l.fail(fmt.Sprintf("172.16.%d.%d", i/256, i%256), now.Add(time.Duration(i)*time.Second))
	}
	if n := len(l.clients); n > maxTracked {
		t.Fatalf("%d addresses tracked, bound %d", n, maxTracked)
	}
	for i := range 2 * maxKnown {
		l.succeed(fmt.Sprintf("192.0.%d.%d", i/256, i%256), now, time.Hour)
	}
	if n := len(l.known); n > maxKnown {
		t.Fatalf("%d known addresses, bound %d", n, maxKnown)
	}
}
