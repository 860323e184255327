package toolexec

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpService is a real MCP server (the official SDK's Streamable HTTP
// handler) behind a swappable handler, so a test can "restart" it and make
// it forget every session.
type mcpService struct {
	*httptest.Server
	versions []string
	handler  atomic.Pointer[http.Handler]
	connects atomic.Int32 // initialize requests: one per session

	mu      sync.Mutex
	headers []http.Header // of every POST
}

func newMCPService(t *testing.T, versions ...string) *mcpService {
	t.Helper()
	s := &mcpService{versions: versions}
	s.restart()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"method":"initialize"`)) {
				s.connects.Add(1)
			}
			s.mu.Lock()
			s.headers = append(s.headers, r.Header.Clone())
			s.mu.Unlock()
		}
		(*s.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// restart replaces the server: sessions the old one issued are unknown.
func (s *mcpService) restart() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "test-mcp", Version: "1.0.0"}, &mcp.ServerOptions{SupportedProtocolVersions: s.versions})
	add := func(name string, h func(ctx context.Context, args map[string]any, req *mcp.CallToolRequest) *mcp.CallToolResult) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return h(ctx, args, req), nil
		})
	}
	text := func(ts ...string) []mcp.Content {
		var c []mcp.Content
		for _, t := range ts {
			c = append(c, &mcp.TextContent{Text: t})
		}
		return c
	}
	add("quote", func(_ context.Context, args map[string]any, req *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{
			Content:           text("a quote"),
			StructuredContent: map[string]any{"symbol": args["symbol"], "price": 1.5, "caller": req.Extra.Header.Get("X-Claw-ID")},
		}
	})
	add("echo", func(_ context.Context, args map[string]any, _ *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text("echo"), StructuredContent: args}
	})
	add("fail", func(_ context.Context, args map[string]any, _ *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: text("symbol not found: ZZZ", "see https://docs.example.com/symbols")}
	})
	add("json_text", func(context.Context, map[string]any, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text("{\n \"a\": [1, 2]\n}")}
	})
	add("plain", func(context.Context, map[string]any, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text("hello world")}
	})
	add("multi", func(context.Context, map[string]any, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text("first", "{\"second\":2}")}
	})
	add("image", func(context.Context, map[string]any, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "chart"}, &mcp.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"}}}
	})
	add("empty", func(context.Context, map[string]any, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{}
	})
	add("big", func(context.Context, map[string]any, *mcp.CallToolRequest) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text(strings.Repeat("data ", 10000))}
	})
	add("slow", func(ctx context.Context, _ map[string]any, _ *mcp.CallToolRequest) *mcp.CallToolResult {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		return &mcp.CallToolResult{Content: text("late")}
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	s.handler.Store(&h)
}

func (s *mcpService) posts() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

func mcpTool(base, toolName string) *manifest.Tool {
	return &manifest.Tool{
		Name:        "research." + toolName,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"},"claw_id":{"type":"string"}}}`),
		Execution: manifest.Execution{
			Transport: manifest.TransportMCP,
			Service:   "research",
			BaseURL:   base,
			Path:      "/mcp",
			ToolName:  toolName,
			Auth:      &manifest.Auth{Type: "bearer", Token: "mcp-secret-token"},
		},
	}
}

// legacy is the newest protocol version that still has sessions.
const legacy = "2025-11-25"

func TestMCPResults(t *testing.T) {
	for _, versions := range [][]string{nil, {legacy}} {
		name := "latest"
		if versions != nil {
			name = versions[0]
		}
		t.Run(name, func(t *testing.T) {
			svc := newMCPService(t, versions...)
			e := New(Options{})
			defer e.Close()
			for _, tc := range []struct {
				tool, data string
			}{
				{"quote", `{"caller":"analyst-0","price":1.5,"symbol":"AAPL"}`},
				{"json_text", `{"a":[1,2]}`},
				{"plain", `"hello world"`},
				{"multi", `"first\n{\"second\":2}"`},
				{"image", `[{"type":"text","text":"chart"},{"type":"image","mimeType":"image/png","data":"UE5H"}]`},
				{"empty", `null`},
			} {
				env := run(t, e, mcpTool(svc.URL, tc.tool), `{"symbol":"AAPL"}`)
				wantOK(t, env)
				if string(env.Data) != tc.data {
					t.Errorf("%s: data = %s, want %s", tc.tool, env.Data, tc.data)
				}
			}

			env := run(t, e, mcpTool(svc.URL, "fail"), `{}`)
			wantFail(t, env, CodeToolError, 0)
			if env.Error.Message != "symbol not found: ZZZ see https://docs.example.com/symbols" {
				t.Errorf("tool_error message = %q", env.Error.Message)
			}
			if n := svc.connects.Load(); n != 1 {
				t.Errorf("%d session starts for one agent, want 1 (sessions are reused)", n)
			}
		})
	}
}

func TestMCPHeadersAndClawID(t *testing.T) {
	svc := newMCPService(t)
	e := New(Options{})
	defer e.Close()
	env := run(t, e, mcpTool(svc.URL, "echo"), `{"symbol":"X","claw_id":"someone-else"}`)
	wantOK(t, env)
	if string(env.Data) != `{"claw_id":"analyst-0","symbol":"X"}` {
		t.Errorf("arguments the server saw: %s", env.Data)
	}
	posts := svc.posts()
	if len(posts) == 0 {
		t.Fatal("no requests")
	}
	for _, h := range posts {
		if h.Get("Authorization") != "Bearer mcp-secret-token" || h.Get("X-Claw-ID") != "analyst-0" {
			t.Errorf("request headers: Authorization=%q X-Claw-ID=%q", h.Get("Authorization"), h.Get("X-Claw-ID"))
		}
	}

	// Arguments are validated before the server is reached.
	before := len(svc.posts())
	tool := mcpTool(svc.URL, "echo")
	tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}`)
	wantFail(t, run(t, e, tool, `{"symbol":5}`), CodeInvalidArguments, RPCInvalidParams)
	if after := len(svc.posts()); after != before {
		t.Errorf("server saw %d requests for invalid arguments", after-before)
	}
}

func TestMCPSessionsPerAgentAndCredential(t *testing.T) {
	svc := newMCPService(t, legacy)
	e := New(Options{})
	defer e.Close()
	call := func(agent, token string) {
		t.Helper()
		tool := mcpTool(svc.URL, "quote")
		env := e.Run(context.Background(), Call{AgentID: agent, Tool: tool, Auth: &manifest.Auth{Type: "bearer", Token: token}, Timeout: 5 * time.Second})
		wantOK(t, env)
		if !strings.Contains(string(env.Data), `"caller":"`+agent+`"`) {
			t.Errorf("data = %s", env.Data)
		}
	}
	call("a", "t1")
	call("a", "t1")
	call("b", "t1")
	call("b", "t1")
	call("a", "t2")
	if n := svc.connects.Load(); n != 3 {
		t.Errorf("%d sessions started, want 3 (a/t1, b/t1, a/t2)", n)
	}
}

func TestMCPSessionLostIsReestablished(t *testing.T) {
	svc := newMCPService(t, legacy)
	e := New(Options{})
	defer e.Close()
	tool := mcpTool(svc.URL, "quote")
	wantOK(t, run(t, e, tool, `{"symbol":"A"}`))
	first := svc.posts()[len(svc.posts())-1].Get("Mcp-Session-Id")
	if first == "" {
		t.Fatal("the legacy server issued no session id")
	}

	svc.restart() // the server forgets every session
	env := run(t, e, tool, `{"symbol":"B"}`)
	wantOK(t, env)
	if !strings.Contains(string(env.Data), `"symbol":"B"`) {
		t.Errorf("data = %s", env.Data)
	}
	if n := svc.connects.Load(); n != 2 {
		t.Errorf("%d session starts, want 2", n)
	}
	last := svc.posts()[len(svc.posts())-1].Get("Mcp-Session-Id")
	if last == "" || last == first {
		t.Errorf("session id after restart = %q (before %q)", last, first)
	}
	// And the new session is reused.
	wantOK(t, run(t, e, tool, `{"symbol":"C"}`))
	if n := svc.connects.Load(); n != 2 {
		t.Errorf("%d session starts after reuse, want 2", n)
	}
}

func TestMCPFailures(t *testing.T) {
	svc := newMCPService(t)
	e := New(Options{})

	// Timeout.
	start := time.Now()
	env := e.Run(context.Background(), Call{AgentID: "a", Tool: mcpTool(svc.URL, "slow"), Timeout: 150 * time.Millisecond})
	wantFail(t, env, CodeTimeout, RPCTimeout)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout took %s", d)
	}
	// The session survives a timed-out call.
	wantOK(t, run(t, e, mcpTool(svc.URL, "plain"), `{}`))

	// Unknown tool on the server: the server's error, in our words.
	env = run(t, e, mcpTool(svc.URL, "no_such_tool"), `{}`)
	wantFail(t, env, CodeMisconfigured, 0)
	checkNoLeak(t, env, svc.URL)

	// Results over the read bound fail rather than buffer without end.
	small := New(Options{MaxResponseBytes: 4096})
	env = run(t, small, mcpTool(svc.URL, "big"), `{}`)
	wantFail(t, env, CodeServiceError, 0)
	small.Close()

	// Large results within it are truncated like any other.
	env = e.Run(context.Background(), Call{AgentID: "a", Tool: mcpTool(svc.URL, "big"), Timeout: 5 * time.Second, MaxResultBytes: 500})
	wantOK(t, env)
	if !env.Truncated || env.OriginalBytes != len(`"`)*2+50000 {
		t.Errorf("truncated=%v original_bytes=%d", env.Truncated, env.OriginalBytes)
	}

	// Nobody there.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	env = run(t, e, mcpTool(dead.URL, "quote"), `{}`)
	wantFail(t, env, CodeUnavailable, 0)
	checkNoLeak(t, env, dead.URL)

	// After Close, MCP calls fail cleanly.
	e.Close()
	env = run(t, e, mcpTool(svc.URL, "plain"), `{}`)
	wantFail(t, env, CodeUnavailable, 0)
}

func checkNoLeak(t *testing.T, env Envelope, base string) {
	t.Helper()
	msg := env.Error.Message
	for _, leak := range []string{base, strings.TrimPrefix(base, "http://"), "127.0.0.1", "mcp-secret-token", "/mcp"} {
		if strings.Contains(msg, leak) {
			t.Errorf("message leaks %q: %q", leak, msg)
		}
	}
}

func TestMCPConcurrentCallsShareOneSession(t *testing.T) {
	svc := newMCPService(t, legacy)
	e := New(Options{})
	defer e.Close()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := run(t, e, mcpTool(svc.URL, "quote"), `{"symbol":"S"}`)
			if !env.OK {
				t.Errorf("%s", mustJSON(env))
			}
		}()
	}
	wg.Wait()
	if n := svc.connects.Load(); n != 1 {
		t.Errorf("%d sessions for concurrent calls of one agent, want 1", n)
	}
}

func TestMCPSessionBound(t *testing.T) {
	svc := newMCPService(t, legacy)
	e := New(Options{MaxMCPSessions: 2})
	defer e.Close()
	for _, agent := range []string{"a", "b", "c", "a"} {
		env := e.Run(context.Background(), Call{AgentID: agent, Tool: mcpTool(svc.URL, "plain"), Timeout: 5 * time.Second})
		wantOK(t, env)
	}
	e.mcp.mu.Lock()
	n := len(e.mcp.sessions)
	e.mcp.mu.Unlock()
	if n > 2 {
		t.Errorf("%d sessions open, bound is 2", n)
	}
	if c := svc.connects.Load(); c != 4 {
		t.Errorf("%d session starts, want 4 (a was evicted by c)", c)
	}
}

func TestMCPIdleSessionsAreClosed(t *testing.T) {
	svc := newMCPService(t, legacy)
	e := New(Options{MCPSessionIdleTimeout: time.Minute})
	defer e.Close()
	call := func(agent string) {
		t.Helper()
		wantOK(t, e.Run(context.Background(), Call{AgentID: agent, Tool: mcpTool(svc.URL, "plain"), Timeout: 5 * time.Second}))
	}
	call("a")
	// Age a's session past the idle timeout instead of waiting for it.
	e.mcp.mu.Lock()
	for _, ent := range e.mcp.sessions {
		ent.lastUsed.Store(time.Now().Add(-2 * time.Minute).UnixNano())
	}
	e.mcp.mu.Unlock()
	call("b") // a new session sweeps idle ones
	e.mcp.mu.Lock()
	n := len(e.mcp.sessions)
	e.mcp.mu.Unlock()
	if n != 1 {
		t.Errorf("%d sessions open, want 1 (a's was idle)", n)
	}
	call("a")
	if c := svc.connects.Load(); c != 3 {
		t.Errorf("%d session starts, want 3", c)
	}
}
