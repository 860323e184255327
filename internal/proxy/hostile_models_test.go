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

// GET /v1/models counts in the agent's requests in progress.
func TestHostileModelListsAreAdmitted(t *testing.T) {
	p, _, release, _ := modelsPod(t, http.StatusOK, func(c *Config, _ *Options) { c.MaxAgentConcurrency = 2 })
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
