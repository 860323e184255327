package broker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// TestHostileOnceRuleHoldsUnderConcurrentCalls: with "svc.one at most once
// in the session", eight concurrent tools/call requests of one MCP session
// run it once; before the fix every call was checked before any was
// recorded, so all eight ran.
func TestHostileOnceRuleHoldsUnderConcurrentCalls(t *testing.T) {
	var ran atomic.Int32
	release := make(chan struct{})
	b := New(Options{Runner: runnerFunc(func(ctx context.Context, c toolexec.Call) toolexec.Envelope {
		ran.Add(1)
		select { // hold the call so the others arrive while it runs
		case <-release:
		case <-time.After(200 * time.Millisecond):
		}
		return toolexec.Envelope{OK: true, Data: json.RawMessage(`1`)}
	})})
	defer b.Close()
	a := agentWith("svc.one")
	a.Tools.Rules = []manifest.Rule{{ID: "once", When: `!("svc.one" in session.called)`, Source: "test"}}
	a.Tools.Tools[0].When = []string{"once"}
	a.SetTools(a.Tools)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.ServeAgent(w, r, a) }))
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: authed{}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var wg sync.WaitGroup
	var ok, denied atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "svc.one"})
			if err != nil {
				t.Error(err)
				return
			}
			var env toolexec.Envelope
			_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env)
			switch {
			case env.OK:
				ok.Add(1)
			case env.Error != nil && env.Error.Code == toolexec.CodePolicyDenied:
				denied.Add(1)
			default:
				t.Errorf("unexpected result %+v", env)
			}
		}()
	}
	wg.Wait()
	close(release)
	if ran.Load() != 1 || ok.Load() != 1 || denied.Load() != 7 {
		t.Fatalf("ran %d, ok %d, denied %d; want 1, 1, 7", ran.Load(), ok.Load(), denied.Load())
	}
}
