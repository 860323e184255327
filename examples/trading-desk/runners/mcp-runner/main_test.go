package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/examples/trading-desk/runners/convo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const agentToken = "agent-token-1234"

// mcpCall is what the test MCP server saw of one tools/call.
type mcpCall struct {
	Name, Args, Authorization string
}

// podServer is a real MCP server (the official SDK's Streamable HTTP
// handler) standing in for cllama's /mcp: it requires the agent's bearer
// and serves two tools with canonical, dotted names.
type podServer struct {
	*httptest.Server
	mu       sync.Mutex
	calls    []mcpCall
	rejected int
}

func newPodServer(t *testing.T, token, contextText string) *podServer {
	t.Helper()
	p := &podServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "pod", Version: "test"}, nil)
	record := func(req *mcp.CallToolRequest) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls = append(p.calls, mcpCall{req.Params.Name, string(req.Params.Arguments), req.Extra.Header.Get("Authorization")})
	}
	type lookupIn struct {
		Symbol string `json:"symbol" jsonschema:"the ticker symbol"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "market-data.lookup_symbol", Description: "Look up a ticker symbol"},
		func(_ context.Context, req *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
			record(req)
			if in.Symbol != "ACME" {
				return nil, nil, fmt.Errorf("unknown symbol %s", in.Symbol)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Acme Corporation (ACME)"}, &mcp.TextContent{Text: "last 123.45"}}}, nil, nil
		})
	srv.AddTool(&mcp.Tool{Name: "trading-api.get_market_context", Description: "Cash and buying power", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			record(req)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: contextText}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			p.mu.Lock()
			p.rejected++
			p.mu.Unlock()
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *podServer) seen() ([]mcpCall, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls), p.rejected
}

// chatRequest is the part of a chat completions request the fake model reads.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func (r chatRequest) content(i int) string {
	var s string
	_ = json.Unmarshal(r.Messages[i].Content, &s)
	return s
}

// toolCall is one scripted call in the fake model's answer.
type toolCall struct{ ID, Name, Args string }

// fakeModel is a scripted OpenAI chat completions server: for each user
// message it first answers with the scripted tool calls, then, once the
// last message is a tool result, with text.
type fakeModel struct {
	*httptest.Server
	mu       sync.Mutex
	requests []chatRequest
}

func newFakeModel(t *testing.T, script map[string][]toolCall, answers map[string]string) *fakeModel {
	t.Helper()
	f := &fakeModel{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+agentToken {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		user := ""
		for i, m := range req.Messages {
			if m.Role == "user" {
				user = req.content(i)
			}
		}
		var calls []toolCall
		text := answers[user]
		if last := req.Messages[len(req.Messages)-1]; last.Role != "tool" {
			calls, text = script[user], ""
		}
		writeCompletion(w, req, text, calls)
	}))
	t.Cleanup(f.Close)
	return f
}

func writeCompletion(w http.ResponseWriter, req chatRequest, text string, calls []toolCall) {
	type fn struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var tcs []tc
	for i, c := range calls {
		tcs = append(tcs, tc{i, c.ID, "function", fn{c.Name, c.Args}})
	}
	finish := "stop"
	if len(tcs) > 0 {
		finish = "tool_calls"
	}
	msg := map[string]any{"role": "assistant", "content": text}
	if len(tcs) > 0 {
		msg["tool_calls"] = tcs
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(msg, nil)
	chunk(map[string]any{}, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (f *fakeModel) seen() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func writeConfig(t *testing.T, servers map[string]string, token string) string {
	t.Helper()
	entries := map[string]any{}
	for name, url := range servers {
		entries[name] = map[string]any{"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer " + token}}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": entries})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunCallsPodToolsOverMCP plays two turns (one plain, one streamed)
// against a real MCP server and a scripted model: the model's MCP calls go
// to the MCP server with the agent's bearer, save_note stays in the
// runner, and the results go back to the model under the right ids.
func TestRunCallsPodToolsOverMCP(t *testing.T) {
	pod := newPodServer(t, agentToken, `{"cash":100000,"buying_power":100000}`)
	const (
		ask1 = "What is ACME at?"
		ask2 = "And NOPE, with my buying power?"
	)
	model := newFakeModel(t, map[string][]toolCall{
		ask1: {
			{"call_lookup_1", "market-data__lookup_symbol", `{"symbol":"ACME"}`},
			{"call_note_1", "save_note", `{"text":"ACME at 123.45"}`},
		},
		ask2: {
			{"call_lookup_2", "market-data__lookup_symbol", `{"symbol":"NOPE"}`},
			{"call_ctx_2", "trading-api__get_market_context", `{}`},
		},
	}, map[string]string{ask1: "ACME is at 123.45; noted.", ask2: "NOPE is not a symbol; buying power is 100000."})

	t.Setenv("CLAW_MCP_CONFIG", writeConfig(t, map[string]string{"trading-desk": pod.URL + "/mcp"}, agentToken))
	t.Setenv("CLAW_MCP_URL", "")
	t.Setenv("OPENAI_BASE_URL", model.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", agentToken)

	var out bytes.Buffer
	tr := &convo.Transcript{Out: &out, Runner: "native"}
	cfg := convo.Config{Name: "native", Model: "openai/scripted-native", MaxSteps: 6,
		Turns: []convo.Turn{{User: ask1, Stream: false}, {User: ask2, Stream: true}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, cfg, tr); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	tr.Summary()
	transcript := out.String()
	t.Logf("transcript:\n%s", transcript)

	t.Run("the MCP server ran the calls with the arguments and the bearer", func(t *testing.T) {
		calls, _ := pod.seen()
		want := []mcpCall{
			{"market-data.lookup_symbol", `{"symbol":"ACME"}`, "Bearer " + agentToken},
			{"market-data.lookup_symbol", `{"symbol":"NOPE"}`, "Bearer " + agentToken},
			{"trading-api.get_market_context", `{}`, "Bearer " + agentToken},
		}
		if !slices.Equal(calls, want) {
			t.Errorf("MCP calls = %q\nwant %q", calls, want)
		}
	})

	reqs := model.seen()
	if len(reqs) != 4 {
		t.Fatalf("the model got %d requests, want 4 (two per turn)", len(reqs))
	}
	t.Run("the model is offered save_note and every MCP tool under API-safe names", func(t *testing.T) {
		for i, req := range reqs {
			var names []string
			for _, tool := range req.Tools {
				names = append(names, tool.Function.Name)
				if tool.Function.Name == "market-data__lookup_symbol" {
					props, _ := tool.Function.Parameters["properties"].(map[string]any)
					if _, ok := props["symbol"]; !ok {
						t.Errorf("request %d: lookup_symbol's parameters lost the input schema: %v", i, tool.Function.Parameters)
					}
				}
			}
			slices.Sort(names)
			if want := []string{"market-data__lookup_symbol", "save_note", "trading-api__get_market_context"}; !slices.Equal(names, want) {
				t.Errorf("request %d offers %v, want %v", i, names, want)
			}
		}
		if got := []bool{reqs[0].Stream, reqs[1].Stream, reqs[2].Stream, reqs[3].Stream}; !slices.Equal(got, []bool{false, false, true, true}) {
			t.Errorf("stream flags = %v, want the first turn plain and the second streamed", got)
		}
	})
	t.Run("the tool results go back under the model's call ids", func(t *testing.T) {
		check := func(req chatRequest, want map[string]func(string) bool) {
			t.Helper()
			got := map[string]string{}
			for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "tool"; i-- {
				got[req.Messages[i].ToolCallID] = req.content(i)
			}
			if len(got) != len(want) {
				t.Errorf("tool results = %q, want ids %v", got, slices.Sorted(maps.Keys(want)))
			}
			for id, ok := range want {
				if c, found := got[id]; !found || !ok(c) {
					t.Errorf("tool result %s = %q (present %v)", id, c, found)
				}
			}
		}
		check(reqs[1], map[string]func(string) bool{
			"call_lookup_1": func(c string) bool { return c == "Acme Corporation (ACME)\nlast 123.45" },
			"call_note_1":   func(c string) bool { return c == "saved note #1" },
		})
		check(reqs[3], map[string]func(string) bool{
			"call_lookup_2": func(c string) bool {
				return strings.HasPrefix(c, "error: ") && strings.Contains(c, "unknown symbol NOPE")
			},
			"call_ctx_2": func(c string) bool { return c == `{"cash":100000,"buying_power":100000}` },
		})
	})
	t.Run("the transcript tells MCP calls from runner-native ones", func(t *testing.T) {
		if len(tr.Turns) != 2 {
			t.Fatalf("turns = %+v", tr.Turns)
		}
		if got := tr.Turns[0]; !slices.Equal(got.MCPCalls, []string{"market-data.lookup_symbol"}) || !slices.Equal(got.NativeCalls, []string{"save_note"}) || got.Answer != "ACME is at 123.45; noted." {
			t.Errorf("turn 1 = %+v", got)
		}
		if got := tr.Turns[1]; !slices.Equal(got.MCPCalls, []string{"market-data.lookup_symbol", "trading-api.get_market_context"}) || got.NativeCalls != nil || !got.Stream {
			t.Errorf("turn 2 = %+v", got)
		}
		for _, want := range []string{
			"tool market-data.lookup_symbol from trading-desk, offered to the model as market-data__lookup_symbol",
			`market-data.lookup_symbol({"symbol":"ACME"}) -> Acme Corporation (ACME) last 123.45 [mcp]`,
			`save_note({"text":"ACME at 123.45"}) -> saved note #1 [runner-native]`,
			`market-data.lookup_symbol({"symbol":"NOPE"}) -> error: `,
			`"mcp_calls":["market-data.lookup_symbol"]`,
		} {
			if !strings.Contains(transcript, want) {
				t.Errorf("transcript lacks %q:\n%s", want, transcript)
			}
		}
	})
}

func TestServerRejectsMissingBearer(t *testing.T) {
	pod := newPodServer(t, agentToken, "{}")
	resp, err := http.Post(pod.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d without a bearer, want 401", resp.StatusCode)
	}
}

func TestConnectWithWrongBearerFailsAtOnce(t *testing.T) {
	pod := newPodServer(t, agentToken, "{}")
	start := time.Now()
	_, err := openToolbox(context.Background(), []server{{Name: "pod", URL: pod.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer wrong"}}}, 10*time.Second)
	if err == nil {
		t.Fatal("connected with a wrong bearer")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a 401 was retried for %s; it is final", d)
	}
	if !strings.Contains(err.Error(), "MCP server pod") || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("error %q does not name the server", err)
	}
	if _, rejected := pod.seen(); rejected == 0 {
		t.Error("the server saw no request")
	}
	t.Logf("error: %v", err)
}

func TestConnectGivesUpOnAnUnreachableServer(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL + "/mcp"
	dead.Close()
	start := time.Now()
	_, err := openToolbox(context.Background(), []server{{Name: "pod", URL: url}}, 1200*time.Millisecond)
	d := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "could not be reached") {
		t.Fatalf("err = %v, want a could-not-be-reached error", err)
	}
	if d < time.Second || d > 10*time.Second {
		t.Errorf("gave up after %s, want about the 1.2s bound", d)
	}
}

func TestConnectWaitsForALateServer(t *testing.T) {
	pod := newPodServer(t, agentToken, "{}")
	// A free port nothing listens on until the server starts late.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	late := &http.Server{Handler: pod.Config.Handler}
	started := make(chan error, 1)
	time.AfterFunc(800*time.Millisecond, func() {
		l, err := net.Listen("tcp", addr)
		started <- err
		if err == nil {
			go late.Serve(l)
		}
	})
	defer late.Close()
	tb, err := openToolbox(context.Background(), []server{{Name: "pod", URL: "http://" + addr + "/mcp", Headers: map[string]string{"Authorization": "Bearer " + agentToken}}}, 20*time.Second)
	if lerr := <-started; lerr != nil {
		t.Skipf("the port was taken meanwhile: %v", lerr)
	}
	if err != nil {
		t.Fatalf("openToolbox: %v", err)
	}
	defer tb.Close()
	if len(tb.tools) != 2 {
		t.Errorf("tools = %d, want 2", len(tb.tools))
	}
}

// TestServersOfferingTheSameTool: two servers list a tool of the same
// name; each gets its own model name and calls reach their own server.
func TestServersOfferingTheSameTool(t *testing.T) {
	a := newPodServer(t, agentToken, "from a")
	b := newPodServer(t, agentToken, "from b")
	auth := map[string]string{"Authorization": "Bearer " + agentToken}
	tb, err := openToolbox(context.Background(), []server{{"a", a.URL + "/mcp", auth}, {"b", b.URL + "/mcp", auth}}, time.Second, "save_note")
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	seen := map[string]bool{}
	for _, mt := range tb.tools {
		if seen[mt.ModelName] || !validModelName(mt.ModelName) {
			t.Errorf("model name %q repeated or invalid", mt.ModelName)
		}
		seen[mt.ModelName] = true
		if mt.Tool.Name != "trading-api.get_market_context" {
			continue
		}
		found, ok := tb.find(mt.ModelName)
		if !ok || found != mt {
			t.Fatalf("find(%q) = %v, %v", mt.ModelName, found, ok)
		}
		if out, isErr := found.call(context.Background(), ""); isErr || out != "from "+mt.Server {
			t.Errorf("%s via %s = %q, %v", mt.Tool.Name, mt.ModelName, out, isErr)
		}
	}
	if len(seen) != 4 {
		t.Errorf("%d tools, want 4", len(seen))
	}
	if _, ok := tb.find("save_note"); ok {
		t.Error("save_note leads to an MCP tool")
	}
}

func TestResultText(t *testing.T) {
	for _, c := range []struct {
		res  *mcp.CallToolResult
		want string
	}{
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{&mcp.CallToolResult{StructuredContent: map[string]any{"x": 1}}, `{"x":1}`},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}}, &mcp.TextContent{Text: "t"}}}, "t\n(1 non-text content blocks left out)"},
		{&mcp.CallToolResult{}, "(no content)"},
	} {
		if got := resultText(c.res); got != c.want {
			t.Errorf("resultText = %q, want %q", got, c.want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	if unreachable(errors.New("401 Unauthorized")) {
		t.Error("an HTTP answer counted as unreachable")
	}
}
