package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Native mode end to end: an MCP client built with the official SDK talks
// to cllama's /mcp as wired by cmd/cllama (the proxy's authentication, the
// broker, the executor, audit and history), and the tools it calls are
// real HTTP and MCP services.

// toolService is the pod service behind the native tools.
type toolService struct {
	srv *httptest.Server
	mu  sync.Mutex
	// seen records each request: path and Authorization.
	seen     []string
	canceled chan struct{}
	// traceparents are the W3C trace contexts the requests carried.
	traceparents []string
}

func newToolService(t testing.TB) *toolService {
	s := &toolService{canceled: make(chan struct{}, 4)}
	mux := http.NewServeMux()
	note := func(r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		s.traceparents = append(s.traceparents, r.Header.Get("Traceparent"))
		s.mu.Unlock()
	}
	mux.HandleFunc("GET /context/{claw_id}", func(w http.ResponseWriter, r *http.Request) {
		note(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"agent":%q,"symbol":%q}`, r.PathValue("claw_id"), r.URL.Query().Get("symbol"))
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		note(r)
		select {
		case <-r.Context().Done():
			s.canceled <- struct{}{}
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		note(r)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"blob":%q}`, strings.Repeat("x", 5000))
	})
	mux.HandleFunc("POST /trade", func(w http.ResponseWriter, r *http.Request) {
		note(r)
		_, _ = io.WriteString(w, `{"filled":true}`)
	})
	// An MCP service (a discovered or CKP mcp_source tool).
	ms := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	mcp.AddTool(ms, &mcp.Tool{Name: "add"}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, map[string]float64, error) {
		return nil, map[string]float64{"sum": in.A + in.B}, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer calc-secret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *toolService) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// nativeTools is analyst's tools.json: four native tools over two
// services and one mediated tool.
func nativeTools(base string) string {
	return fmt.Sprintf(`{"version":1,"policy":{"max_tool_result_bytes":1000},"tools":[
 {"name":"desk.get_context","mode":"native","description":"the agent's market context",
  "inputSchema":{"type":"object","properties":{"claw_id":{"type":"string"},"symbol":{"type":"string"}},"required":["symbol"]},
  "outputSchema":{"type":"object","properties":{"agent":{"type":"string"},"symbol":{"type":"string"}}},
  "annotations":{"readOnly":true,"title":"Market context"},
  "execution":{"transport":"http","service":"desk","base_url":%[1]q,"method":"GET","path":"/context/{claw_id}","auth":{"type":"bearer","token":"compiled-secret"}}},
 {"name":"desk.slow","mode":"native","description":"slow","inputSchema":{"properties":{}},
  "execution":{"transport":"http","service":"desk","base_url":%[1]q,"method":"GET","path":"/slow","timeout_ms":300}},
 {"name":"desk.big","mode":"native","description":"big","inputSchema":{"type":"object"},
  "execution":{"transport":"http","service":"desk","base_url":%[1]q,"method":"GET","path":"/big"}},
 {"name":"calc.add","mode":"native","description":"add","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},
  "execution":{"transport":"mcp","service":"calc","base_url":%[1]q,"path":"/mcp","tool_name":"add","auth":{"type":"bearer","token":"calc-secret"}}},
 {"name":"desk.trade","mode":"mediated","description":"trade","inputSchema":{"type":"object"},
  "execution":{"transport":"http","service":"desk","base_url":%[1]q,"method":"POST","path":"/trade"}}
]}`, base)
}

type mcpPod struct {
	base    string
	dir     string
	env     []string // cllama's environment (restart)
	svc     *toolService
	audit   *lockedBuffer
	stderr  *lockedBuffer
	stop    func()
	clients []*mcp.ClientSession
}

func startMCPPod(t testing.TB, extraEnv ...string) *mcpPod {
	t.Helper()
	return startMCPPodWith(t, nil, extraEnv...)
}

// startMCPPodWith is startMCPPod with more files written by more (the
// context and auth directories, the tool service's URL) before cllama
// starts.
func startMCPPodWith(t testing.TB, more func(ctxDir, authDir, svcURL string), extraEnv ...string) *mcpPod {
	t.Helper()
	p := &mcpPod{dir: t.TempDir(), svc: newToolService(t), audit: &lockedBuffer{}, stderr: &lockedBuffer{}}
	ctxDir := filepath.Join(p.dir, "context")
	write(t, filepath.Join(ctxDir, "analyst", "metadata.json"), `{"token":"analyst:s3cret"}`)
	write(t, filepath.Join(ctxDir, "analyst", "tools.json"), nativeTools(p.svc.srv.URL))
	write(t, filepath.Join(ctxDir, "analyst", "service-auth", "desk.json"), `{"service":"desk","auth_type":"bearer","token":"projected-for-analyst"}`)
	write(t, filepath.Join(ctxDir, "plain", "metadata.json"), `{"token":"plain:other"}`)
	if more != nil {
		more(ctxDir, filepath.Join(p.dir, "auth"), p.svc.srv.URL)
	}
	env := append([]string{
		"CLAW_CONTEXT_ROOT=" + ctxDir,
		"CLAW_AUTH_DIR=" + filepath.Join(p.dir, "auth"),
		"CLAW_SESSION_HISTORY_DIR=" + filepath.Join(p.dir, "history"),
		"CLAW_POD=desk",
		"OPENAI_API_KEY=sk-unused",
	}, extraEnv...)
	p.env = env
	p.serve(t)
	return p
}

// serve starts cllama for p on a new port, with p's environment.
func (p *mcpPod) serve(t testing.TB) {
	t.Helper()
	cfg, err := proxy.LoadConfig(nil, p.env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveOn(ctx, ln, cfg, audit.New(p.audit), p.stderr, nil) }()
	p.base = "http://" + ln.Addr().String()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			for _, c := range p.clients {
				_ = c.Close()
			}
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("cllama did not stop")
			}
		})
	}
	t.Cleanup(p.stop)
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func (p *mcpPod) connect(t testing.TB, token, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-runner", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: p.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := c.Connect(context.Background(), tr, opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	p.clients = append(p.clients, cs)
	return cs
}

func (p *mcpPod) events(t *testing.T) []audit.Event {
	var out []audit.Event
	for _, ln := range strings.Split(strings.TrimSpace(p.audit.String()), "\n") {
		var e audit.Event
		if ln != "" && json.Unmarshal([]byte(ln), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// history is agent's history read whole (every file of it: concurrent
// exchanges may be spread over several), every line a whole entry.
func (p *mcpPod) history(t *testing.T, agent string) []history.Entry {
	t.Helper()
	es, files, err := history.ReadAgent(filepath.Join(p.dir, "history"), agent)
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	for _, f := range files {
		if f.Malformed != 0 {
			t.Fatalf("%s: %d lines that are not an entry", f.Path, f.Malformed)
		}
	}
	return es
}

func isResultLink(c mcp.Content) bool {
	l, ok := c.(*mcp.ResourceLink)
	return ok && strings.HasPrefix(l.URI, "claw-result://") && l.Size != nil
}

func envelopeOf(t *testing.T, res *mcp.CallToolResult) toolexec.Envelope {
	t.Helper()
	// One text block: the envelope; beside it, only a kept result's
	// resource_link (claw-result://<handle>).
	if len(res.Content) != 1 && !(len(res.Content) == 2 && isResultLink(res.Content[1])) {
		t.Fatalf("content = %+v", res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content = %T", res.Content[0])
	}
	var env toolexec.Envelope
	if err := json.Unmarshal([]byte(tc.Text), &env); err != nil {
		t.Fatalf("text is not an envelope: %q", tc.Text)
	}
	if env.OK == res.IsError {
		t.Fatalf("isError %v disagrees with the envelope %+v", res.IsError, env)
	}
	return env
}

func TestMCPListsExactlyTheGrantedNativeTools(t *testing.T) {
	p := startMCPPod(t)
	// The SDK's newest protocol (sessionless) and the 2025-11-25 handshake.
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("protocol "+version, func(t *testing.T) {
			cs := p.connect(t, "analyst:s3cret", version)
			if cs.InitializeResult().ProtocolVersion != version {
				t.Fatalf("negotiated %q", cs.InitializeResult().ProtocolVersion)
			}
			list, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			// Listed under names every provider accepts, the canonical
			// name in _meta.
			var names, canonical []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
				c, _ := tool.Meta["io.clawdapus/canonical-name"].(string)
				canonical = append(canonical, c)
			}
			slices.Sort(names)
			slices.Sort(canonical)
			// claw.read_result beside them: their results over the cap are
			// kept behind a handle.
			if want := []string{"calc__add", "claw__read_result", "desk__big", "desk__get_context", "desk__slow"}; !slices.Equal(names, want) {
				t.Fatalf("tools = %v, want %v (the mediated desk.trade is not listed)", names, want)
			}
			if want := []string{"calc.add", "claw.read_result", "desk.big", "desk.get_context", "desk.slow"}; !slices.Equal(canonical, want) {
				t.Fatalf("canonical names = %v, want %v", canonical, want)
			}
			raw, _ := json.Marshal(list)
			for _, secret := range []string{p.svc.srv.URL, "127.0.0.1", "compiled-secret", "calc-secret", "projected-for-analyst", "execution", "base_url"} {
				if strings.Contains(string(raw), secret) {
					t.Fatalf("the listing leaks %q: %s", secret, raw)
				}
			}
			for _, tool := range list.Tools {
				if tool.Name != "desk__get_context" {
					continue
				}
				in, _ := json.Marshal(tool.InputSchema)
				out, _ := json.Marshal(tool.OutputSchema)
				if !strings.Contains(string(in), `"symbol"`) || !strings.Contains(string(out), `"agent"`) ||
					tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.Annotations.Title != "Market context" || tool.Description != "the agent's market context" {
					t.Fatalf("definition = %+v in=%s out=%s", tool, in, out)
				}
			}
		})
	}
	// An agent without native tools lists none.
	cs := p.connect(t, "plain:other", "")
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 0 {
		t.Fatalf("plain agent: %+v, %v", list, err)
	}
}

func TestMCPCallsAreGovernedAndAudited(t *testing.T) {
	p := startMCPPod(t)
	cs := p.connect(t, "analyst:s3cret", "")
	ctx := context.Background()
	call := func(name string, args any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}

	// A valid call: claw_id forced to the caller, the projected bearer
	// used, the data both as the envelope and as structuredContent.
	res := call("desk.get_context", map[string]any{"symbol": "NVDA", "claw_id": "executor"})
	env := envelopeOf(t, res)
	if !env.OK || string(env.Data) != `{"agent":"analyst","symbol":"NVDA"}` {
		t.Fatalf("envelope = %+v", env)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"agent":"analyst","symbol":"NVDA"}` {
		t.Fatalf("structuredContent = %s", sc)
	}
	if got := p.svc.requests(); len(got) != 1 || got[0] != "/context/analyst Bearer projected-for-analyst" {
		t.Fatalf("service saw %v", got)
	}

	// Schema violation: -32602, the service not called.
	env = envelopeOf(t, call("desk.get_context", map[string]any{"symbol": 5}))
	if env.OK || env.Error.Code != toolexec.CodeInvalidArguments || env.Error.RPCCode != toolexec.RPCInvalidParams {
		t.Fatalf("invalid arguments: %+v", env)
	}
	// The tool's own timeout: -32014.
	env = envelopeOf(t, call("desk.slow", nil))
	if env.OK || env.Error.Code != toolexec.CodeTimeout || env.Error.RPCCode != toolexec.RPCTimeout {
		t.Fatalf("timeout: %+v", env)
	}
	// The policy's result cap: cut and said so.
	env = envelopeOf(t, call("desk.big", map[string]any{}))
	if !env.OK || !env.Truncated || env.OriginalBytes != 5011 || len(env.Data) > 1000+2 {
		t.Fatalf("truncation: ok=%v truncated=%v original=%d len=%d", env.OK, env.Truncated, env.OriginalBytes, len(env.Data))
	}
	// An MCP service, with its compiled credential.
	env = envelopeOf(t, call("calc.add", map[string]any{"a": 2, "b": 3}))
	if !env.OK || string(env.Data) != `{"sum":5}` {
		t.Fatalf("mcp transport: %+v %+v", env, env.Error)
	}
	// A mediated tool of the agent, and a name it does not hold.
	env = envelopeOf(t, call("desk.trade", map[string]any{}))
	if env.OK || env.Error.Code != toolexec.CodeWrongMode || !strings.Contains(env.Error.Message, "mediated") {
		t.Fatalf("mediated tool on /mcp: %+v", env)
	}
	env = envelopeOf(t, call("desk.nope", map[string]any{}))
	if env.OK || env.Error.Code != toolexec.CodeUnknownTool {
		t.Fatalf("unknown tool: %+v", env)
	}
	for _, r := range p.svc.requests() {
		if strings.HasPrefix(r, "/trade") {
			t.Fatal("a mediated tool ran on /mcp")
		}
	}

	// Every call is a tool_call event with mode native...
	want := map[string]string{"desk.get_context": "ok,invalid_arguments", "desk.slow": "timeout", "desk.big": "ok", "calc.add": "ok", "desk.trade": "wrong_mode", "desk.nope": "unknown_tool"}
	got := map[string][]string{}
	for _, e := range p.events(t) {
		if e.Type == audit.TypeToolCall {
			if e.Mode != "native" || e.ClawID != "analyst" || e.Format != "mcp" || e.RequestID == "" || e.LatencyMS == nil {
				t.Fatalf("event = %+v", e)
			}
			got[e.Tool] = append(got[e.Tool], e.Status)
		}
	}
	for tool, statuses := range want {
		if strings.Join(got[tool], ",") != statuses {
			t.Errorf("audit %s: %v, want %s", tool, got[tool], statuses)
		}
	}
	// ...and a history entry with the mediated trace's fields.
	var entries []history.Entry
	deadline := time.Now().Add(5 * time.Second)
	for len(entries) < 7 && time.Now().Before(deadline) {
		entries = p.history(t, "analyst")
		time.Sleep(10 * time.Millisecond)
	}
	if len(entries) != 7 {
		t.Fatalf("history has %d entries, want 7", len(entries))
	}
	first := entries[0]
	tc := first.ToolTrace[0].ToolCalls[0]
	if first.Format != "mcp" || first.Pod != "desk" || tc.Mode != "native" || tc.Name != "desk.get_context" || tc.Service != "desk" ||
		string(tc.Arguments) != `{"claw_id":"analyst","symbol":"NVDA"}` || string(tc.ModelArguments) != `{"claw_id":"executor","symbol":"NVDA"}` ||
		!strings.Contains(string(tc.Result), `"ok":true`) {
		t.Fatalf("history entry = %+v, call = %+v", first, tc)
	}
	for _, e := range entries {
		if strings.Contains(string(e.Request)+string(e.Response), "projected-for-analyst") || strings.Contains(string(e.Request)+string(e.Response), p.svc.srv.URL) {
			t.Fatalf("history leaks a credential or address: %+v", e)
		}
	}
}

func TestMCPAuthenticatesLikeTheModelRoutes(t *testing.T) {
	p := startMCPPod(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(path, auth string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, p.base+path, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	for _, c := range []struct {
		auth   string
		status int
	}{{"", 401}, {"Bearer nocolon", 401}, {"Bearer analyst:wrong", 403}, {"Bearer ghost:s3cret", 403}} {
		mcpRes := post("/mcp", c.auth)
		modelRes := post("/v1/chat/completions", c.auth)
		mb, _ := io.ReadAll(mcpRes.Body)
		if mcpRes.StatusCode != c.status || modelRes.StatusCode != c.status {
			t.Fatalf("%q: /mcp %d, model route %d, want %d: %s", c.auth, mcpRes.StatusCode, modelRes.StatusCode, c.status, mb)
		}
		if c.status == 401 && !strings.HasPrefix(mcpRes.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("%q: no WWW-Authenticate", c.auth)
		}
		if c.status == 403 {
			modelBody, _ := io.ReadAll(modelRes.Body)
			if string(mb) != string(modelBody) {
				t.Fatalf("an unknown agent and a wrong secret must read alike on both: %s vs %s", mb, modelBody)
			}
		}
	}
	// A session belongs to the agent that opened it.
	res := post("/mcp", "Bearer analyst:s3cret")
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, sid)
	}
	req, _ := http.NewRequest(http.MethodPost, p.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer plain:other")
	req.Header.Set("Mcp-Session-Id", sid)
	other, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Body.Close()
	if other.StatusCode != http.StatusForbidden {
		t.Fatalf("another agent on analyst's session: %d", other.StatusCode)
	}
}

func TestMCPClientCancelCancelsTheCall(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) { testClientCancel(t, version) })
	}
}

func testClientCancel(t *testing.T, version string) {
	p := startMCPPod(t)
	cs := p.connect(t, "analyst:s3cret", version)
	// desk.slow's own timeout is 300ms; the client gives up first.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "desk.slow", Arguments: map[string]any{}})
	select {
	case <-p.svc.canceled:
	case <-time.After(time.Second):
		t.Fatal("the service call outlived the client's request")
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range p.events(t) {
			if e.Type == audit.TypeToolCall && e.Tool == "desk.slow" {
				if e.Status != toolexec.CodeCanceled {
					t.Fatalf("status %q, want canceled", e.Status)
				}
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the canceled call was not audited")
}

func TestMCPSessionsPerAgentAreBounded(t *testing.T) {
	p := startMCPPod(t, "CLLAMA_MCP_MAX_SESSIONS=2")
	first := p.connect(t, "analyst:s3cret", "2025-11-25")
	second := p.connect(t, "analyst:s3cret", "2025-11-25")
	third := p.connect(t, "analyst:s3cret", "2025-11-25")
	if _, err := third.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("the newest session must work: %v", err)
	}
	// Which of the two older sessions was used last depends on when each
	// client's event stream connected: exactly one of them is closed.
	closed := 0
	for _, cs := range []*mcp.ClientSession{first, second} {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			closed++
		}
	}
	if closed != 1 {
		t.Fatalf("%d of the two older sessions were closed, want 1", closed)
	}
	found := false
	for _, e := range p.events(t) {
		found = found || (e.Type == audit.TypeError && strings.Contains(e.Error, "CLLAMA_MCP_MAX_SESSIONS"))
	}
	if !found {
		t.Fatal("closing a session for the bound must be audited")
	}
}

// A client that drops its connection mid-call, without an MCP
// cancellation, cancels the call too. (In the sessionless protocol the
// request is the call: TestMCPClientCancelCancelsTheCall covers it.)
func TestMCPDisconnectCancelsTheCall(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			p := startMCPPod(t)
			do := func(ctx context.Context, sid, body string) (*http.Response, error) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/mcp", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer analyst:s3cret")
				req.Header.Set("Mcp-Protocol-Version", version)
				if sid != "" {
					req.Header.Set("Mcp-Session-Id", sid)
				}
				return http.DefaultClient.Do(req)
			}
			sid := ""
			if version < "2026-07-28" { // the handshake protocols open a session first
				res, err := do(context.Background(), "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				sid = res.Header.Get("Mcp-Session-Id")
				if res, err = do(context.Background(), sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err == nil {
					res.Body.Close()
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if res, err := do(ctx, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"desk.slow","arguments":{}}}`); err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			select {
			case <-p.svc.canceled:
			case <-time.After(time.Second):
				t.Fatal("the service call outlived the client's connection")
			}
			// desk.slow times out on its own after 300ms: the audit says
			// which came first.
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				for _, e := range p.events(t) {
					if e.Type == audit.TypeToolCall && e.Tool == "desk.slow" {
						if e.Status != toolexec.CodeCanceled {
							t.Fatalf("status %q, want canceled", e.Status)
						}
						return
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Fatal("the call was not audited")
		})
	}
}
