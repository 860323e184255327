package proxy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
)

// echoBroker stands in for the MCP broker: it reads the whole body, as
// the SDK does, and says whose and how large it was.
type echoBroker struct{}

func (echoBroker) ServeAgent(w http.ResponseWriter, r *http.Request, a *agentctx.Agent) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s %d", a.ID, len(b))
}

func withEchoBroker(_ *Config, o *Options) { o.Broker = echoBroker{} }

// Every route the agent listener serves reads a request body within
// CLLAMA_BODY_READ_TIMEOUT: a body that stalls is answered, or its
// connection closed, instead of holding it open.
func TestHostileEveryRouteBoundsTheBodyRead(t *testing.T) {
	p := newPod(t, withEchoBroker, func(c *Config, _ *Options) { c.BodyReadTimeout = 300 * time.Millisecond })
	for _, r := range []struct {
		method, path string
		reads        bool // the route reads the body: its answer is 408
	}{
		{http.MethodPost, pathChat, true},
		{http.MethodPost, pathMessages, true},
		{http.MethodGet, "/v1/responses/resp_1", true},
		{http.MethodPost, "/mcp", true},
		{http.MethodGet, "/v1/models", false},
		{http.MethodGet, "/health", false},
		{http.MethodPost, "/nowhere", false},
	} {
		for _, declared := range []int64{1000, -1} {
			t.Logf("%s %s, declared %d", r.method, r.path, declared)
			c := slowUpload(t, p, r.method, r.path, aliceToken, declared, []byte(`{"model":`))
			res := answer(t, c, 10*time.Second)
			if r.reads && (res == nil || res.StatusCode != http.StatusRequestTimeout) {
				t.Errorf("%s %s (declared %d): want 408, got %v", r.method, r.path, declared, res)
			}
		}
	}
}

// /mcp goes through the admission of the model routes: one agent's
// requests in progress are bounded there too, its bodies count in flight
// and are bounded in size.
func TestHostileMCPIsAdmittedLikeEveryRoute(t *testing.T) {
	p := newPod(t, withEchoBroker, func(c *Config, _ *Options) {
		c.MaxAgentConcurrency, c.MCPMaxBodyBytes, c.QueueWait = 2, 64<<10, time.Millisecond
	})
	addBob(t, p)
	res := p.post(t, "/mcp", `{"jsonrpc":"2.0"}`)
	if body := readAll(t, res.Body); res.StatusCode != http.StatusOK || body != "alice 17" {
		t.Fatalf("a small MCP request: %d %q", res.StatusCode, body)
	}
	for _, declared := range []int64{64<<10 + 1, -1} {
		c := slowUpload(t, p, http.MethodPost, "/mcp", aliceToken, declared, []byte(strings.Repeat("x", 64<<10+1)))
		if res := answer(t, c, 10*time.Second); res == nil || res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("an MCP body over CLLAMA_MCP_MAX_BODY_BYTES (declared %d): %v", declared, res)
		}
	}
	for range 2 {
		slowUpload(t, p, http.MethodPost, "/mcp", aliceToken, 4<<10, []byte("{"))
	}
	waitFor(t, "alice's two MCP uploads to be admitted", func() bool { return p.srv.admit.requestsOf("alice") == 2 })
	if p.srv.admit.inFlight() == 0 {
		t.Fatal("MCP bodies being read hold none of the in-flight budget")
	}
	wantRefusal(t, p, postWithin(t, p, "/mcp", `{"jsonrpc":"2.0"}`), http.StatusTooManyRequests, "rate_limit_error", "CLLAMA_MAX_CONCURRENT_PER_AGENT")
	res = p.post(t, "/mcp", `{"jsonrpc":"2.0"}`, "Authorization", "Bearer "+bobToken)
	if body := readAll(t, res.Body); res.StatusCode != http.StatusOK || body != "bob 17" {
		t.Fatalf("bob's MCP request while alice is at her bound: %d %q", res.StatusCode, body)
	}
}

// The routes on stored objects count in the agent's requests in progress.
func TestHostileObjectRoutesAreAdmitted(t *testing.T) {
	p := newPod(t, func(c *Config, _ *Options) { c.MaxAgentConcurrency, c.QueueWait = 2, time.Millisecond })
	for range 2 {
		slowUpload(t, p, http.MethodGet, "/v1/responses/resp_1", aliceToken, 4<<10, []byte("{"))
	}
	waitFor(t, "alice's two uploads to be admitted", func() bool { return p.srv.admit.requestsOf("alice") == 2 })
	req, _ := http.NewRequest(http.MethodGet, p.front.URL+"/v1/responses/resp_1", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	res, err := p.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, p, res, http.StatusTooManyRequests, "rate_limit_error", "CLLAMA_MAX_CONCURRENT_PER_AGENT")
}
