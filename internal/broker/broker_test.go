package broker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/toolname"
)

type runnerFunc func(context.Context, toolexec.Call) toolexec.Envelope

func (f runnerFunc) Run(ctx context.Context, c toolexec.Call) toolexec.Envelope { return f(ctx, c) }

func agentWith(names ...string) *agentctx.Agent {
	t := &manifest.Tools{Version: 1, Policy: manifest.DefaultPolicy()}
	for _, n := range names {
		svc, _, _ := manifest.SplitToolName(n)
		t.Tools = append(t.Tools, manifest.Tool{Name: n, Mode: manifest.ModeNative, InputSchema: json.RawMessage(`{"properties":{}}`),
			Execution: manifest.Execution{Transport: "http", Service: svc, BaseURL: "http://svc", Method: "GET", Path: "/"}})
	}
	a := &agentctx.Agent{ID: "a"}
	a.SetTools(t)
	return a
}

// When the agent's compiled context changes (claw up applied a
// recompile), the list follows and open sessions are told.
func TestListFollowsTheAgentsContext(t *testing.T) {
	b := New(Options{Runner: runnerFunc(func(context.Context, toolexec.Call) toolexec.Envelope {
		return toolexec.Envelope{OK: true, Data: json.RawMessage(`1`)}
	})})
	current := agentWith("svc.one")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.ServeAgent(w, r, current) }))
	defer srv.Close()
	changed := make(chan struct{}, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: authed{}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := func() []string {
		l, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range l.Tools {
			out = append(out, tool.Title)
			if !toolname.Safe(tool.Name) || tool.Name != toolname.Readable(tool.Title) || tool.Meta["io.clawdapus/canonical-name"] != tool.Title {
				t.Fatalf("tool %q (title %q, _meta %v): want a provider-safe name, the canonical name as title and in _meta", tool.Name, tool.Title, tool.Meta)
			}
			if s, _ := json.Marshal(tool.InputSchema); string(s) != `{"properties":{},"type":"object"}` {
				t.Fatalf("inputSchema %s: MCP wants type object stated", s)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"svc.one"}) {
		t.Fatalf("tools %v", got)
	}
	current = agentWith("svc.one", "svc.two")
	if got := names(); !slices.Equal(got, []string{"svc.one", "svc.two"}) {
		t.Fatalf("after reload: %v", got)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed notification")
	}
	// A tool removed by the reload is no longer callable.
	current = agentWith("svc.two")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "svc.one"})
	if err != nil || !res.IsError {
		t.Fatalf("a revoked tool ran: %+v %v", res, err)
	}
}

type authed struct{}

func (authed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer a:x")
	return http.DefaultTransport.RoundTrip(r)
}

// Whatever a client sends as a call, the broker answers with an envelope
// and never panics.
func FuzzCall(f *testing.F) {
	for _, s := range []string{`{}`, `null`, ``, `[]`, `"x"`, `{"a":`, `{"claw_id":"b","\u0063law_id":"c"}`, `1e999`} {
		f.Add("svc.one", s)
		f.Add("svc.nope", s)
	}
	b := New(Options{Runner: runnerFunc(func(_ context.Context, c toolexec.Call) toolexec.Envelope {
		return toolexec.Envelope{OK: true, Data: c.Arguments}
	})})
	a := agentWith("svc.one")
	as := b.serverFor(a.ID)
	as.sync(a)
	f.Fuzz(func(t *testing.T, name, args string) {
		res, err := as.handle(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(args)}})
		if err != nil || res == nil || len(res.Content) != 1 {
			t.Fatalf("%+v %v", res, err)
		}
		var env toolexec.Envelope
		if json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env) != nil || env.OK == res.IsError {
			t.Fatalf("not an envelope: %+v", res)
		}
	})
}

// Tool policy on /mcp: a native tool whose conditions do not hold is not
// listed and its call is policy_denied; session.called is this MCP
// session's calls.
func TestPolicyOnMCP(t *testing.T) {
	ran := map[string]int{}
	var mu sync.Mutex
	b := New(Options{Runner: runnerFunc(func(_ context.Context, c toolexec.Call) toolexec.Envelope {
		mu.Lock()
		ran[c.Tool.Name]++
		mu.Unlock()
		return toolexec.Envelope{OK: true, Data: json.RawMessage(`1`)}
	})})
	a := agentWith("svc.one", "svc.two")
	a.Tools.Rules = []manifest.Rule{{ID: "r1", When: `"svc.one" in session.called`, Source: "test"}}
	a.Tools.Tools[1].When = []string{"r1"}
	a.SetTools(a.Tools)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.ServeAgent(w, r, a) }))
	defer srv.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: authed{}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list := func() []string {
		l, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range l.Tools {
			out = append(out, tool.Title)
		}
		slices.Sort(out)
		return out
	}
	call := func(name string) (*mcp.CallToolResult, toolexec.Envelope) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		var env toolexec.Envelope
		_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env)
		return res, env
	}
	if got := list(); !slices.Equal(got, []string{"svc.one"}) {
		t.Fatalf("before svc.one: %v", got)
	}
	if _, env := call("svc.two"); env.OK || env.Error.Code != toolexec.CodePolicyDenied || ran["svc.two"] != 0 {
		t.Fatalf("svc.two before svc.one: %+v", env)
	}
	call("svc.one")
	if got := list(); !slices.Equal(got, []string{"svc.one", "svc.two"}) {
		t.Fatalf("after svc.one: %v", got)
	}
	if _, env := call("svc.two"); !env.OK || ran["svc.two"] != 1 {
		t.Fatalf("svc.two after svc.one: %+v", env)
	}
	// The name it is listed under calls it too.
	if _, env := call("svc__two"); !env.OK || ran["svc.two"] != 2 {
		t.Fatalf("svc__two: %+v", env)
	}
}

// Protocol versions compare as dates: a header that is not one is not
// the sessionless protocol (it compared greater as a string).
func TestSessionlessProtocolComparesDates(t *testing.T) {
	for v, want := range map[string]bool{"2026-07-28": true, "2027-01-01": true, "2025-11-25": false, "9": false, "": false, "2026-13-01": false, "zzz": false} {
		if got := sessionless(v); got != want {
			t.Errorf("sessionless(%q) = %v, want %v", v, got, want)
		}
	}
}
