package broker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/testproc"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// On /mcp a held tools/call waits for the decision, with progress
// notifications to a client that sent a progress token.

type heldMCP struct {
	m    *approvals.Manager
	cs   *mcp.ClientSession
	ran  atomic.Int32
	args chan json.RawMessage
	mu   sync.Mutex
	prog []*mcp.ProgressNotificationParams
}

func newHeldMCP(t *testing.T, timeout int, store ...approvals.Store) *heldMCP {
	o := approvals.Options{Poll: 10 * time.Millisecond}
	if len(store) > 0 {
		o.Store = store[0]
	}
	h := &heldMCP{m: approvals.New(o), args: make(chan json.RawMessage, 8)}
	b := New(Options{Approvals: h.m, Runner: runnerFunc(func(_ context.Context, c toolexec.Call) toolexec.Envelope {
		h.ran.Add(1)
		h.args <- c.Arguments
		return toolexec.Envelope{OK: true, Data: json.RawMessage(`"filled"`)}
	})})
	a := agentWith("trading-api.execute_trade")
	tools := *a.Tools
	tools.Policy.ApprovalTimeoutMS = timeout
	tools.Tools[0].Approve = []manifest.Approval{{When: `args.quantity * args.price > 10000`, Source: "claw-pod.yml: x-claw.tools[0].approve"}}
	held := &agentctx.Agent{ID: "a"}
	held.SetTools(&tools)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.ServeAgent(w, r, held) }))
	t.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.prog = append(h.prog, r.Params)
			h.mu.Unlock()
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: authed{}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h.cs = cs
	return h
}

// call makes a tools/call with a progress token and returns its answer.
func (h *heldMCP) call(ctx context.Context, args string) chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "trading-api.execute_trade", Arguments: json.RawMessage(args)}
		p.SetProgressToken("tok-1")
		res, err := h.cs.CallTool(ctx, p)
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "transport: " + err.Error()}}}
		}
		out <- res
	}()
	return out
}

func pendingMCP(t *testing.T, m *approvals.Manager) *approvals.Request {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if rs, _ := m.Store().Pending(context.Background()); len(rs) == 1 {
			return rs[0]
		}
	}
	t.Fatal("no pending request")
	return nil
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

func TestAHeldToolsCallWaitsForTheDecision(t *testing.T) {
	h := newHeldMCP(t, 0)
	// A small trade is not held.
	if res := <-h.call(context.Background(), `{"symbol":"NVDA","quantity":1,"price":100}`); res.IsError || h.ran.Load() != 1 {
		t.Fatalf("small trade: %+v", text(res))
	}
	<-h.args
	done := h.call(context.Background(), `{"symbol":"NVDA","quantity":500,"price":120}`)
	r := pendingMCP(t, h.m)
	if r.Mode != manifest.ModeNative || r.Tool != "trading-api.execute_trade" {
		t.Fatalf("request %+v", r)
	}
	// Progress reaches the client while it waits.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		h.mu.Lock()
		n := len(h.prog)
		h.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no progress notification")
		}
	}
	h.mu.Lock()
	if p := h.prog[0]; p.ProgressToken != "tok-1" || !strings.Contains(p.Message, "approval") {
		t.Fatalf("progress %+v", p)
	}
	h.mu.Unlock()
	if h.ran.Load() != 1 {
		t.Fatal("the held call ran before a decision")
	}
	if _, err := h.m.Decide(context.Background(), r.ID, approvals.Decision{State: approvals.Approved, By: "ops", ArgumentsSHA256: r.ArgumentsSHA256}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.IsError {
		t.Fatalf("approved: %s", text(res))
	}
	if got := <-h.args; approvals.Digest(got) != r.ArgumentsSHA256 {
		t.Fatalf("ran with %s, approved %s", got, r.Arguments)
	}

	// Deny.
	done = h.call(context.Background(), `{"symbol":"NVDA","quantity":900,"price":120}`)
	r = pendingMCP(t, h.m)
	if _, err := h.m.Decide(context.Background(), r.ID, approvals.Decision{State: approvals.Denied, By: "ops", Reason: "over the limit"}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; !res.IsError || !strings.Contains(text(res), approvals.CodeDenied) || !strings.Contains(text(res), "over the limit") {
		t.Fatalf("denied: %s", text(res))
	}
	// The client cancels its call.
	ctx, cancel := context.WithCancel(context.Background())
	h.call(ctx, `{"symbol":"NVDA","quantity":900,"price":120}`)
	r = pendingMCP(t, h.m)
	cancel()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got, _ := h.m.Store().Get(context.Background(), r.ID); got.State != approvals.Pending {
			break
		}
	}
	if got, _ := h.m.Store().Get(context.Background(), r.ID); got.State != approvals.Cancelled {
		t.Fatalf("after the client cancelled: %s", got.State)
	}
	if h.ran.Load() != 2 {
		t.Fatalf("ran %d times, want 2 (the small trade, the approved one)", h.ran.Load())
	}
}

func TestAHeldToolsCallTimesOut(t *testing.T) {
	h := newHeldMCP(t, 50)
	if res := <-h.call(context.Background(), `{"symbol":"NVDA","quantity":500,"price":120}`); !res.IsError || !strings.Contains(text(res), approvals.CodeTimeout) {
		t.Fatalf("timeout: %s", text(res))
	}
	if h.ran.Load() != 0 {
		t.Fatal("a timed-out call ran")
	}
}

// With replicas, a decision through another cllama releases the
// tools/call held here.
func TestAHeldToolsCallIsReleasedByAnotherReplica(t *testing.T) {
	opt, err := redis.ParseURL(testproc.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	store := func(replica string) *approvals.Redis {
		c := redis.NewClient(opt)
		t.Cleanup(func() { c.Close() })
		var s *approvals.Redis
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if s, err = approvals.NewRedis(context.Background(), c, "desk", replica, time.Second); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	here, there := store("here"), store("there")
	h := newHeldMCP(t, 0, here)
	done := h.call(context.Background(), `{"symbol":"NVDA","quantity":500,"price":120}`)
	other := approvals.New(approvals.Options{Store: there})
	r := pendingMCP(t, other)
	if _, err := other.Decide(context.Background(), r.ID, approvals.Decision{State: approvals.Approved, By: "ops-there", ArgumentsSHA256: r.ArgumentsSHA256}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.IsError || h.ran.Load() != 1 {
		t.Fatalf("released: %s, ran %d", text(res), h.ran.Load())
	}
}
