package proxy

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// modelsPod is a pod whose provider answers GET /v1/models with status
// once release is called, counting the calls; clock is the pod's.
func modelsPod(t *testing.T, status int, opts ...podOption) (p *pod, calls *atomic.Int32, release func(), clock *atomic.Int64) {
	t.Helper()
	gate := make(chan struct{})
	calls, release, clock = &atomic.Int32{}, sync.OnceFunc(func() { close(gate) }), &atomic.Int64{}
	clock.Store(time.Now().UnixNano())
	opts = append([]podOption{withDefaults, func(_ *Config, o *Options) {
		o.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	}}, opts...)
	p = newPod(t, opts...)
	t.Cleanup(release) // before the pod's cleanups: held calls end
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			defaultProvider(w, r)
			return
		}
		calls.Add(1)
		<-gate
		if status != http.StatusOK {
			http.Error(w, "provider down", status)
			return
		}
		modelsUpstream(w, r)
	})
	return p, calls, release, clock
}

// listModels is GET /v1/models as token, returning the status.
func listModels(t *testing.T, p *pod, ctx context.Context, token string) int {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.front.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := p.front.Client().Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// Concurrent lists of one provider share one upstream call with the
// provider's key, whether it succeeds or fails; a failure is remembered
// briefly, then the list is asked for again.
func TestHostileConcurrentModelListsShareOneUpstreamCall(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusInternalServerError} {
		p, calls, release, clock := modelsPod(t, status)
		const n = 20
		codes := make(chan int, n)
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes <- listModels(t, p, context.Background(), aliceToken)
			}()
		}
		waitFor(t, "the first upstream call", func() bool { return calls.Load() > 0 })
		// The others in progress too, then the fetch ends. (Any that
		// arrive later find its result cached.)
		for deadline := time.Now().Add(5 * time.Second); p.srv.admit.requestsOf("alice") < n && time.Now().Before(deadline); {
			time.Sleep(2 * time.Millisecond)
		}
		release()
		wg.Wait()
		close(codes)
		want := http.StatusOK
		if status != http.StatusOK {
			want = http.StatusBadGateway
		}
		for code := range codes {
			if code != want {
				t.Fatalf("provider %d: a list ended %d, want %d", status, code, want)
			}
		}
		if got := calls.Load(); got != 1 {
			t.Fatalf("provider %d: %d concurrent lists made %d upstream calls, want 1", status, n, got)
		}
		if status == http.StatusOK {
			continue
		}
		if code := listModels(t, p, context.Background(), aliceToken); code != http.StatusBadGateway || calls.Load() != 1 {
			t.Fatalf("within %s of a failure: %d after %d calls, want the failure remembered", modelListFailTTL, code, calls.Load())
		}
		clock.Add(int64(modelListFailTTL))
		if code := listModels(t, p, context.Background(), aliceToken); code != http.StatusBadGateway || calls.Load() != 2 {
			t.Fatalf("%s after a failure: %d after %d calls, want the list asked for again", modelListFailTTL, code, calls.Load())
		}
	}
}

// GET /v1/models counts in the agent's requests in progress.
func TestHostileModelListsAreAdmitted(t *testing.T) {
	p, _, release, _ := modelsPod(t, http.StatusOK, func(c *Config, _ *Options) { c.MaxAgentConcurrency, c.QueueWait = 2, time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			listModels(t, p, ctx, aliceToken)
		}()
	}
	waitFor(t, "two lists in progress", func() bool { return p.srv.admit.requestsOf("alice") == 2 })
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.front.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	res, err := p.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	release()
	wantRefusal(t, p, res, http.StatusTooManyRequests, "rate_limit_error", "CLLAMA_MAX_CONCURRENT_PER_AGENT")
	wg.Wait()
}
