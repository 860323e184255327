package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Slow uploads that declare large bodies hold the budget by what arrived,
// not by what they declared: another agent's small request still gets
// through.
func TestHostileSlowUploadsHoldWhatArrived(t *testing.T) {
	p := newPod(t, func(c *Config, _ *Options) { c.MaxBodyBytes, c.MaxInflightBytes = 4<<20, 16<<20 })
	addBob(t, p)
	for range 4 {
		slowUpload(t, p, http.MethodPost, pathChat, aliceToken, 4<<20, []byte("{"))
	}
	waitFor(t, "the four uploads to be admitted", func() bool {
		return p.srv.admit.requestsOf("alice") == 4 && p.srv.admit.inFlight() >= 4*bodyStep
	})
	if got := p.srv.admit.inFlight(); got > 4*bodyStep {
		t.Fatalf("four uploads that sent one byte each hold %d bytes of the budget, want at most %d", got, 4*bodyStep)
	}
	res := p.post(t, pathChat, requestBody(formatOpenAI, "fake", false), "Authorization", "Bearer "+bobToken)
	if body := readAll(t, res.Body); res.StatusCode != http.StatusOK {
		t.Fatalf("bob's request while alice's uploads stall: %d %s", res.StatusCode, body)
	}
}

// With the defaults, eight slow uploads declaring the largest body no
// longer hold the whole in-flight budget.
func TestHostileEightSlowLargestUploadsWithDefaults(t *testing.T) {
	p := newPod(t)
	addBob(t, p)
	for range 8 {
		slowUpload(t, p, http.MethodPost, pathChat, aliceToken, DefaultMaxBodyBytes, []byte("{"))
	}
	waitFor(t, "the eight uploads to be admitted", func() bool {
		return p.srv.admit.requestsOf("alice") == 8 && p.srv.admit.inFlight() >= 8*bodyStep
	})
	if got := p.srv.admit.inFlight(); got > 8*bodyStep {
		t.Fatalf("eight uploads that sent one byte each hold %d bytes of the budget", got)
	}
	res := p.post(t, pathChat, sizedBody(200), "Authorization", "Bearer "+bobToken)
	if body := readAll(t, res.Body); res.StatusCode != http.StatusOK {
		t.Fatalf("bob's 200-byte request: %d %s", res.StatusCode, body)
	}
}

// One agent holds at most its share of the in-flight budget, even with
// bodies that did arrive: past it, it is told to retry (429), and another
// agent still gets through.
func TestHostileOneAgentHoldsAtMostItsShare(t *testing.T) {
	// The default share: a quarter of the budget, at least one body.
	p, arrived, release := heldPod(t, func(c *Config, _ *Options) { c.MaxBodyBytes, c.MaxInflightBytes = 100_000, 400_000 })
	addBob(t, p)
	done := make(chan int, 8)
	held := func(token string) {
		go func() {
			res := p.post(t, pathChat, sizedBody(90_000), "Authorization", "Bearer "+token)
			_, _ = io.Copy(io.Discard, res.Body)
			done <- res.StatusCode
		}()
	}
	held(aliceToken)
	<-arrived
	for range 3 {
		wantRefusal(t, p, postWithin(t, p, pathChat, sizedBody(90_000)), http.StatusTooManyRequests, "rate_limit_error", "CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT")
	}
	held(bobToken)
	<-arrived // bob's body was admitted while alice held her share
	release()
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("a held request ended %d", code)
		}
	}
	waitFor(t, "the budget to come back", func() bool { return p.srv.admit.inFlight() == 0 })
}

// Bodies of every size arrive whole, however the buffer grew while they
// were read, with a declared length or chunked; the budget comes back.
func TestHostileBodiesArriveWholeAsTheyGrow(t *testing.T) {
	p := newPod(t, func(c *Config, _ *Options) { c.MaxBodyBytes = 16 << 20 })
	for _, n := range []int{100, 70 << 10, bodyStep, bodyStep + 1, 3<<20 + 5, 9<<20 + 7} {
		for _, chunked := range []bool{false, true} {
			body := sizedBody(n)
			var r io.Reader = strings.NewReader(body)
			if chunked {
				r = io.MultiReader(r) // no length known to the client
			}
			req, _ := http.NewRequest(http.MethodPost, p.front.URL+pathChat, r)
			req.Header.Set("Authorization", "Bearer "+aliceToken)
			res, err := p.front.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, res.Body); res.StatusCode != http.StatusOK {
				t.Fatalf("%d bytes (chunked %v): %d %s", n, chunked, res.StatusCode, got)
			}
			up := p.up.requests()
			want := strings.Replace(body, `"fake/gpt-fake"`, `"gpt-fake"`, 1)
			if got := string(up[len(up)-1].Body); got != want {
				t.Fatalf("%d bytes (chunked %v): upstream got %d bytes, want %d", n, chunked, len(got), len(want))
			}
		}
	}
	waitFor(t, "the budget to come back", func() bool { return p.srv.admit.inFlight() == 0 })
}

// countingReader counts the reads of a body.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// The hot path stays lean: a small body with a declared length is read in
// one read into a pooled buffer, and holds its size of the budget.
func TestSmallDeclaredBodyIsOneReadIntoAPooledBuffer(t *testing.T) {
	p := newPod(t)
	const n = 200 << 10
	cr := &countingReader{r: strings.NewReader(strings.Repeat("x", n))}
	r := httptest.NewRequest(http.MethodPost, pathChat, cr)
	r.ContentLength = n
	body, pb, release, err := p.srv.readBody(httptest.NewRecorder(), r, "alice", p.srv.modelBodies())
	if err != nil || len(body) != n || pb == nil || cr.reads != 1 {
		t.Fatalf("err %v, %d bytes, pooled %v, %d reads", err, len(body), pb != nil, cr.reads)
	}
	if got := p.srv.admit.inFlight(); got != n {
		t.Fatalf("holds %d bytes of the budget, want %d", got, n)
	}
	release()
	if got := p.srv.admit.inFlight(); got != 0 {
		t.Fatalf("%d bytes still held after release", got)
	}
}
