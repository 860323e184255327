package proxy

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/clawdapus/clawgo/internal/audit"
)

// heldPod is a pod whose provider holds every request until release is
// called; arrived receives one value per request that reached it.
func heldPod(t *testing.T, opts ...podOption) (p *pod, arrived chan struct{}, release func()) {
	t.Helper()
	p = newPod(t, opts...)
	arrived = make(chan struct{}, 16)
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		arrived <- struct{}{}
		<-gate
		defaultProvider(w, r.Clone(r.Context()))
	})
	return p, arrived, release
}

// sizedBody is a chat request of about n bytes.
func sizedBody(n int) string {
	head := `{"model":"fake/gpt-fake","messages":[{"role":"user","content":"`
	tail := `"}]}`
	return head + strings.Repeat("x", max(0, n-len(head)-len(tail))) + tail
}

func wantRefusal(t *testing.T, p *pod, res *http.Response, status int, typ, text string) {
	t.Helper()
	body := readAll(t, res.Body)
	if res.StatusCode != status || res.Header.Get("Retry-After") != "1" || !strings.Contains(body, `"type":"`+typ+`"`) || !strings.Contains(body, text) {
		t.Fatalf("got %d (Retry-After %q) %s; want %d %s mentioning %s", res.StatusCode, res.Header.Get("Retry-After"), body, status, typ, text)
	}
	for _, e := range p.audit.events(t) {
		if e.Type == audit.TypeError && e.StatusCode == status && e.ClawID == "alice" && strings.Contains(e.Error, text) {
			return
		}
	}
	t.Fatalf("no audit error event for the refusal: %+v", p.audit.events(t))
}

// One agent cannot hold more than its share of requests in progress; the
// next is told to retry, and another agent is not affected.
func TestAgentConcurrencyLimit(t *testing.T) {
	p, arrived, release := heldPod(t, func(c *Config, _ *Options) { c.MaxAgentConcurrency, c.QueueWait = 2, time.Millisecond })
	writeFile(t, filepath.Join(p.root, "bob", "metadata.json"), `{"token":"bob:s3cret-bob"}`)
	done := make(chan int, 2)
	for range 2 {
		go func() {
			res := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false))
			_, _ = io.Copy(io.Discard, res.Body)
			done <- res.StatusCode
		}()
		<-arrived
	}
	wantRefusal(t, p, p.post(t, pathChat, requestBody(formatOpenAI, "fake", false)), http.StatusTooManyRequests, "rate_limit_error", "CLLAMA_MAX_CONCURRENT_PER_AGENT")
	go func() {
		res := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false), "Authorization", "Bearer bob:s3cret-bob")
		_, _ = io.Copy(io.Discard, res.Body)
		done <- res.StatusCode
	}()
	<-arrived // bob's request reached the provider while alice was at her limit
	release()
	for range 3 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("a held request ended %d", code)
		}
	}
	if res := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false)); res.StatusCode != http.StatusOK {
		t.Fatalf("after the others finished: %d", res.StatusCode)
	}
}

// The bodies held by requests in progress are bounded for all agents
// together: past the budget a request is refused before its body is read,
// whether it declares its length or not, and the budget comes back when
// requests end.
func TestInflightBodyBudget(t *testing.T) {
	// One agent may hold the whole budget here (its share is
	// TestHostileOneAgentHoldsAtMostItsShare's).
	p, arrived, release := heldPod(t, func(c *Config, _ *Options) {
		c.MaxBodyBytes, c.MaxInflightBytes, c.MaxAgentInflightBytes = 4000, 6000, 6000
	})
	done := make(chan int, 1)
	go func() {
		res := p.post(t, pathChat, sizedBody(4000))
		_, _ = io.Copy(io.Discard, res.Body)
		done <- res.StatusCode
	}()
	<-arrived
	if got := p.srv.admit.inFlight(); got != 4000 {
		t.Fatalf("in flight %d, want the held body's 4000", got)
	}
	wantRefusal(t, p, p.post(t, pathChat, sizedBody(3000)), http.StatusServiceUnavailable, "overloaded_error", "CLLAMA_MAX_INFLIGHT_BYTES")

	// A body without Content-Length is counted as it is read.
	req, _ := http.NewRequest(http.MethodPost, p.front.URL+pathMessages, io.MultiReader(strings.NewReader(sizedBody(3000))))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	res, err := p.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res.Body)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"type":"error"`) {
		t.Fatalf("chunked body over the budget: %d %s (want 503 in the Anthropic shape)", res.StatusCode, body)
	}
	done2 := make(chan int, 1)
	go func() {
		res := p.post(t, pathChat, sizedBody(1500))
		_, _ = io.Copy(io.Discard, res.Body)
		done2 <- res.StatusCode
	}()
	<-arrived // a body within what is left of the budget reached the provider
	release()
	if code, code2 := <-done, <-done2; code != http.StatusOK || code2 != http.StatusOK {
		t.Fatalf("held requests ended %d and %d", code, code2)
	}
	if got := p.srv.admit.inFlight(); got != 0 {
		t.Fatalf("%d bytes still counted after every request ended", got)
	}
}

// A spike of large bodies that has drained gives its memory back to the
// OS (once, not per request); steady small traffic never does.
func TestAdmissionTrimsAfterASpike(t *testing.T) {
	a := newAdmission(1<<30, 1<<30, 100, 0, 0)
	trims := make(chan struct{}, 10)
	a.trim = func() { trims <- struct{}{} }
	clock := time.Now()
	a.now = func() time.Time { return clock }

	for range 1000 { // small bodies: never a spike
		a.reserve("alice", 1<<20)
		a.release("alice", 1<<20)
	}
	for range 3 {
		a.reserve("alice", 30<<20)
	}
	a.release("alice", 30<<20)
	a.release("alice", 30<<20) // 30 MiB still held: more than an eighth of the peak
	select {
	case <-trims:
		t.Fatal("trimmed while the spike is still held")
	case <-time.After(50 * time.Millisecond):
	}
	a.release("alice", 30<<20)
	select {
	case <-trims:
	case <-time.After(5 * time.Second):
		t.Fatal("no trim after the spike drained")
	}
	// Another spike at once: the trim waits for trimEvery.
	a.reserve("alice", 90<<20)
	a.release("alice", 90<<20)
	select {
	case <-trims:
		t.Fatal("trimmed twice within trimEvery")
	case <-time.After(100 * time.Millisecond):
	}
	a.mu.Lock()
	scheduled := a.trimTimer != nil
	a.mu.Unlock()
	if !scheduled {
		t.Fatal("the second spike's trim is not scheduled")
	}
}

// After traffic stops, the memory its requests used goes back to the OS
// once: not while a request is in progress, not again while nothing was
// served, and not more often than the spike's trim.
func TestAdmissionTrimsOnceIdle(t *testing.T) {
	a := newAdmission(1<<30, 1<<30, 100, 0, 0)
	a.idleAfter = 20 * time.Millisecond
	trims := make(chan struct{}, 10)
	a.trim = func() { trims <- struct{}{} }
	var idles atomic.Int32 // Options.Idle runs with each idle trim
	a.idle = func() { idles.Add(1) }
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	a.now = func() time.Time { return time.Unix(0, clock.Load()) }
	trimmed := func(within time.Duration) bool {
		select {
		case <-trims:
			return true
		case <-time.After(within):
			return false
		}
	}

	a.enter(context.Background(), "alice")
	a.enter(context.Background(), "bob")
	a.leave("alice") // bob's request is still in progress
	if trimmed(100 * time.Millisecond) {
		t.Fatal("trimmed while a request was in progress")
	}
	a.leave("bob")
	if !trimmed(5 * time.Second) {
		t.Fatal("no trim once idle")
	}
	if trimmed(100 * time.Millisecond) {
		t.Fatal("trimmed again with nothing served since")
	}
	a.enter(context.Background(), "alice")
	a.leave("alice")
	if trimmed(100 * time.Millisecond) {
		t.Fatalf("trimmed twice within %s", trimEvery)
	}
	clock.Add(int64(trimEvery))
	a.enter(context.Background(), "alice")
	a.leave("alice")
	if !trimmed(5 * time.Second) {
		t.Fatalf("no trim once idle %s after the last", trimEvery)
	}
	// Options.Idle runs right after the trim it follows.
	for deadline := time.Now().Add(5 * time.Second); idles.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := idles.Load(); n != 2 {
		t.Fatalf("Options.Idle ran %d times for two idle trims", n)
	}
}

// What a sync.Pool holds when traffic stops (connection and body buffers)
// is given back by the trim, not kept until a later collection.
func TestFreeHeapFreesWhatPoolsHold(t *testing.T) {
	var pool sync.Pool
	buf := new([1 << 20]byte)
	held := weak.Make(buf)
	pool.Put(buf)
	buf = nil
	FreeHeap()
	if held.Value() != nil {
		t.Fatal("a buffer left in a pool is still live after the trim")
	}
	runtime.KeepAlive(&pool)
}
