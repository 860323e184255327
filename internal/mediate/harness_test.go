package mediate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/formats"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstream is a scripted model provider: it answers each call with the
// next step of its script and records what it received.
type upstream struct {
	t    *testing.T
	kit  kit
	srv  *httptest.Server
	mu   sync.Mutex
	seen [][]byte
	// canceled counts calls whose request context ended before an answer.
	canceled int
	script   []step
	// jsonOnly answers streaming requests without streaming, as some
	// providers do.
	jsonOnly bool
}

func newUpstream(t *testing.T, k kit) *upstream {
	u := &upstream{t: t, kit: k}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	n := len(u.seen)
	u.seen = append(u.seen, body)
	var s step
	ok := n < len(u.script)
	if ok {
		s = u.script[n]
	}
	u.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusTeapot)
		return
	}
	if s.Dyn != nil {
		s = s.Dyn(u.kit.decodeUpstream(u.t, body))
	}
	if s.Hold {
		<-r.Context().Done()
		u.mu.Lock()
		u.canceled++
		u.mu.Unlock()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.Status != 0 {
		if s.RetryAfter != "" {
			w.Header().Set("Retry-After", s.RetryAfter)
		}
		w.WriteHeader(s.Status)
		_, _ = w.Write([]byte(s.Raw))
		return
	}
	if s.Raw != "" {
		_, _ = w.Write([]byte(s.Raw))
		return
	}
	if wire.Bool(topMember(body, "stream")) && !u.jsonOnly {
		u.stream(w, r, s, n)
		return
	}
	_, _ = w.Write(u.kit.upstreamResponse(s, n))
}

func topMember(body []byte, key string) json.RawMessage {
	var top map[string]json.RawMessage
	_ = json.Unmarshal(body, &top)
	return top[key]
}

// stream answers a streaming request with the step as the format streams
// it (its synthetic stream, usage included), Gap between events; FailAfter
// replaces the events from that one on with the format's error event, and
// CutAfter ends the stream there without its end.
func (u *upstream) stream(w http.ResponseWriter, r *http.Request, s step, n int) {
	wf, err := formats.Lookup(u.kit.format())
	if err != nil {
		u.t.Error(err)
		return
	}
	f := wf.(wire.ToolLoop)
	resp, err := f.ParseResponse(u.kit.upstreamResponse(s, n))
	if err != nil {
		u.t.Error(err)
		return
	}
	events, err := f.StreamEvents(resp, resp.Usage, true)
	if err != nil {
		u.t.Error(err)
		return
	}
	sse.PrepareHeader(w.Header())
	w.WriteHeader(http.StatusOK)
	sw := sse.NewWriter(w)
	for i, e := range events {
		switch {
		case s.FailAfter > 0 && i == s.FailAfter:
			ev := f.ErrorEvent("overloaded_error", "upstream overloaded")
			_ = sw.Event(sse.Event{Name: ev.Name, Data: ev.Data})
			return
		case s.CutAfter > 0 && i == s.CutAfter:
			return
		case s.Gap > 0 && i > 0:
			select {
			case <-time.After(s.Gap):
			case <-r.Context().Done():
				u.mu.Lock()
				u.canceled++
				u.mu.Unlock()
				return
			}
		}
		if sw.Event(sse.Event{Name: e.Name, Data: e.Data}) != nil {
			return
		}
	}
}

func (u *upstream) canceledCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.canceled
}

// requests decodes every request the upstream received.
func (u *upstream) requests() []upReq {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]upReq, len(u.seen))
	for i, b := range u.seen {
		out[i] = u.kit.decodeUpstream(u.t, b)
	}
	return out
}

// services are the managed tools' backends: HTTP endpoints and an MCP
// server built with the official SDK.
type services struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
	auth map[string]string
}

func newServices(t *testing.T) *services {
	s := &services{hits: map[string]int{}, auth: map[string]string{}}
	mux := http.NewServeMux()
	count := func(name string, r *http.Request) {
		s.mu.Lock()
		s.hits[name]++
		s.auth[name] = r.Header.Get("Authorization")
		s.mu.Unlock()
	}
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		count("echo", r)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"echo":%s}`, body)
	})
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		count("slow", r)
		_, _ = io.ReadAll(r.Body) // lets the server notice a closed connection
		select {
		case <-r.Context().Done():
			s.mu.Lock()
			s.hits["slow-canceled"]++
			s.mu.Unlock()
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		count("big", r)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(bytes.Repeat([]byte("x"), 40000))
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	type addOut struct {
		Sum float64 `json:"sum"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "add", Description: "add two numbers"}, func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		s.mu.Lock()
		s.hits["add"]++
		s.mu.Unlock()
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *services) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[name]
}

// toolsManifest is the agent's tools.json: four tools over two services.
func toolsManifest(base string, p manifest.Policy) *manifest.Tools {
	schemaQ := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)
	return &manifest.Tools{Version: 1, Policy: p.WithDefaults(), Tools: []manifest.Tool{
		{Name: "svc.echo", Description: "echo q", InputSchema: schemaQ, Execution: manifest.Execution{Transport: "http", Service: "svc", BaseURL: base, Method: "POST", Path: "/echo"}},
		{Name: "svc.slow", Description: "never answers in time", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: manifest.Execution{Transport: "http", Service: "svc", BaseURL: base, Method: "POST", Path: "/slow", TimeoutMS: 150}},
		{Name: "svc.big", Description: "a large result", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: manifest.Execution{Transport: "http", Service: "svc", BaseURL: base, Method: "GET", Path: "/big"}},
		{Name: "calc.add", Description: "add", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`), Execution: manifest.Execution{Transport: "mcp", Service: "calc", BaseURL: base, Path: "/mcp", ToolName: "add"}},
	}}
}

// memHistory records history entries.
type memHistory struct {
	mu      sync.Mutex
	entries []history.Entry
}

func (h *memHistory) Append(e history.Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := json.Marshal(e); err != nil {
		return err
	}
	h.entries = append(h.entries, e)
	return nil
}

func (h *memHistory) all() []history.Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]history.Entry(nil), h.entries...)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) events() []audit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []audit.Event
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var e audit.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Type != "" {
			out = append(out, e)
		}
	}
	return out
}

// harness is a runner-facing server in front of a Mediator, a scripted
// upstream and the tool services. It builds the Exchange the way the proxy
// does after authentication and routing.
type harness struct {
	t        *testing.T
	kit      kit
	up       *upstream
	svc      *services
	hist     *memHistory
	audit    *syncBuffer
	agent    *agentctx.Agent
	med      *Mediator
	front    *httptest.Server
	stateDir string
	// gate is the gate service when a test uses it (useGate).
	gate *gateService
	// feeds are what the feed decorator would have injected.
	feeds map[string]string
}

type harnessOptions struct {
	policy    manifest.Policy
	keepalive time.Duration
	stateDir  string
	runner    toolexec.Runner
	// maxEntryBytes is the continuity store's per-entry cap (0: default).
	maxEntryBytes int64
	// continuity replaces the store opened from stateDir.
	continuity ContinuityStore
	// results keeps results over the cap (nil: they are cut).
	results resultstore.Store
	// approvals holds calls of tools with approvals.
	approvals *approvals.Manager
}

func newHarness(t *testing.T, k kit, o harnessOptions) *harness {
	h := &harness{t: t, kit: k, up: newUpstream(t, k), svc: newServices(t), hist: &memHistory{}, audit: &syncBuffer{}}
	h.agent = &agentctx.Agent{ID: "analyst-0", Tools: toolsManifest(h.svc.srv.URL, o.policy),
		ServiceAuth: map[string]*manifest.ServiceAuth{"svc": {Service: "svc", AuthType: "bearer", Token: "svc-secret"}}}
	h.stateDir = o.stateDir
	if h.stateDir == "" {
		h.stateDir = t.TempDir()
	}
	h.med = h.newMediator(o)
	h.front = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.front.Close)
	return h
}

func (h *harness) newMediator(o harnessOptions) *Mediator {
	runner := o.runner
	if runner == nil {
		ex := toolexec.New(toolexec.Options{})
		h.t.Cleanup(func() { _ = ex.Close() })
		runner = ex
	}
	ka := o.keepalive
	if ka == 0 {
		ka = time.Hour
	}
	if h.med != nil {
		_ = h.med.Close() // a restart: the old one lets go of the state directory
	}
	m, err := New(Options{Runner: runner, Recorder: recorder.New(audit.New(h.audit), h.hist), StateDir: h.stateDir, KeepaliveInterval: ka, ContinuityMaxEntryBytes: o.maxEntryBytes, Continuity: o.continuity,
		RetryBaseDelay: time.Millisecond, Results: o.results, Approvals: o.approvals})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = m.Close() })
	return m
}

func (h *harness) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var top map[string]json.RawMessage
	_ = json.Unmarshal(body, &top)
	model, _ := wire.String(top["model"])
	x := &exchange.Exchange{
		ID: fmt.Sprintf("req-%d", time.Now().UnixNano()), Start: time.Now(), Agent: h.agent, Pod: "desk",
		Format: h.kit.format(), Model: "scripted/" + model, Provider: "scripted", UpstreamModel: model,
		Stream: wire.Bool(top["stream"]), Original: body, Body: body, Feeds: h.feeds,
		Send: func(ctx context.Context, b []byte) (*http.Response, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.up.srv.URL+h.kit.path(), bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			return http.DefaultClient.Do(req)
		},
	}
	h.med.Mediate(w, r, x)
}

// post sends a runner request and returns the response.
func (h *harness) post(ctx context.Context, body []byte) *http.Response {
	h.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.front.URL+h.kit.path(), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("post: %v", err)
	}
	h.t.Cleanup(func() { res.Body.Close() })
	return res
}

// waitEntries waits until n history entries are recorded: the Mediator
// records after the last byte reached the runner.
func (h *harness) waitEntries(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(h.hist.all()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d history entries, want %d", len(h.hist.all()), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func waitABit() { time.Sleep(10 * time.Millisecond) }
