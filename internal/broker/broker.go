// Package broker is cllama's MCP endpoint (native mode, spec 000 "the
// default execution model"): a Streamable HTTP MCP server, built on the
// official Go SDK, on which a runner that is an MCP client lists and calls
// its agent's native-mode tools. tools/list answers exactly the agent's
// granted native tools from its compiled tools.json (canonical
// "<service>.<tool>" names, description, inputSchema, outputSchema,
// annotations; nothing of execution); tools/call runs through the same
// governed call as the model loop's (internal/toolcall), and every call is
// an audit tool_call event and a session-history entry with mode native.
//
// It does not authenticate: internal/proxy does, with the same checks as
// the model routes, and hands each request over with its agent
// (ServeAgent). The SDK binds each MCP session to the agent that opened
// it, so no agent can use another's session.
package broker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/toolname"
	"github.com/clawdapus/clawgo/internal/wire"
	"go.opentelemetry.io/otel/trace"
)

// Path is where cllama serves MCP (fixed: compiled runner configuration
// points at it).
const Path = "/mcp"

// Defaults for Options' zero values.
const (
	DefaultMaxSessionsPerAgent = 16
	DefaultSessionIdle         = 30 * time.Minute
	DefaultMaxCallsPerAgent    = 32
	DefaultMaxRequestBytes     = 4 << 20
)

// Recorder appends session-history entries (history.Writer implements it).
type Recorder interface {
	Append(e history.Entry) error
}

// Options configure a Broker.
type Options struct {
	// Runner executes calls (the executor the model loop uses). Required.
	Runner toolexec.Runner
	// Audit receives one tool_call event per call. Nil discards.
	Audit *audit.Logger
	// History receives one entry per call. Nil records nothing.
	History Recorder
	// Feeds returns the agent's feeds as last fetched, by name (feeds'
	// Decorator.Cached), for tool policy. Nil: none.
	Feeds func(a *agentctx.Agent) map[string]string
	// Events, when set, receives the events and entries instead of Audit
	// and History (cllama's one recorder).
	Events *recorder.Recorder
	// Pod names the pod in history entries.
	Pod string
	// MaxSessionsPerAgent bounds an agent's open MCP sessions; opening
	// one more closes its least recently used (default 16).
	MaxSessionsPerAgent int
	// SessionIdle closes a session unused this long (default 30m).
	SessionIdle time.Duration
	// MaxCallsPerAgent bounds an agent's calls in progress; one more is
	// answered too_many_tool_calls without running (default 32).
	MaxCallsPerAgent int
	// MaxRequestBytes bounds one MCP request body (default 4 MiB).
	MaxRequestBytes int64
	// NewID returns a request id for a call's audit event and history
	// entry. Default: "mcp_" + a random per-process prefix + a counter.
	NewID func() string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Version is announced as the server's version.
	Version string
}

// Broker serves MCP for every agent. It is safe for concurrent use.
type Broker struct {
	o       Options
	rec     *recorder.Recorder
	policy  *policy.Evaluator
	handler http.Handler

	mu     sync.Mutex
	agents map[string]*agentServer
	seq    atomic.Uint64
}

// New returns a Broker.
func New(o Options) *Broker {
	if o.MaxSessionsPerAgent <= 0 {
		o.MaxSessionsPerAgent = DefaultMaxSessionsPerAgent
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxCallsPerAgent <= 0 {
		o.MaxCallsPerAgent = DefaultMaxCallsPerAgent
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	b := &Broker{o: o, rec: o.Events, policy: policy.NewEvaluator(), agents: map[string]*agentServer{}}
	if b.rec == nil {
		b.rec = recorder.New(o.Audit, o.History)
	}
	if b.o.NewID == nil {
		// A random per-process prefix and a counter: unique across
		// restarts, like the proxy's request ids.
		var r [6]byte
		_, _ = rand.Read(r[:])
		prefix := "mcp_" + hex.EncodeToString(r[:]) + "_"
		b.o.NewID = func() string { return prefix + strconv.FormatUint(b.seq.Add(1), 36) }
	}
	getServer := func(r *http.Request) *mcp.Server {
		if as, ok := r.Context().Value(agentKey{}).(*agentServer); ok {
			return as.server
		}
		return nil
	}
	handlerOpts := func(stateless bool) *mcp.StreamableHTTPOptions {
		return &mcp.StreamableHTTPOptions{
			Stateless:           stateless,
			SessionTimeout:      o.SessionIdle,
			MaxRequestBodyBytes: o.MaxRequestBytes,
			// cllama is reached by pod service name, never on localhost
			// by a browser; the agent's token is the protection.
			DisableLocalhostProtection:   true,
			PropagateRequestCancellation: true,
			Logger:                       slog.New(slog.DiscardHandler),
		}
	}
	// The SDK serves the sessionless protocol (2026-07-28 and later)
	// statelessly only, and the handshake protocols (2025-11-25 and
	// earlier) with sessions: a request goes to the handler of the
	// protocol it declares.
	stateful := mcp.NewStreamableHTTPHandler(getServer, handlerOpts(false))
	stateless := mcp.NewStreamableHTTPHandler(getServer, handlerOpts(true))
	sdk := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= sessionlessProtocol && r.Header.Get("Mcp-Session-Id") == "" {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	// The SDK binds a session to the TokenInfo.UserID that opened it and
	// refuses it to any other: the agent proxy authenticated.
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		as, ok := ctx.Value(agentKey{}).(*agentServer)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: as.id}, nil
	}
	b.handler = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sdk)
	return b
}

type agentKey struct{}

// sessionlessProtocol is the first MCP protocol version without the
// initialize handshake and its sessions.
const sessionlessProtocol = "2026-07-28"

// ServeAgent serves one MCP request of an authenticated agent a.
func (b *Broker) ServeAgent(w http.ResponseWriter, r *http.Request, a *agentctx.Agent) {
	as := b.serverFor(a.ID)
	as.sync(a)
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		as.touch(sid)
	} else if r.Method == http.MethodPost && r.Header.Get("Mcp-Protocol-Version") < sessionlessProtocol {
		// Making room and opening the session are one step: requests
		// that may open one are served one at a time per agent.
		select {
		case as.opening <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-as.opening }()
		as.makeRoom()
	}
	if r.Method == http.MethodPost {
		// A call ends when the HTTP request that carried it does: the
		// handshake protocols' SDK handler runs calls detached from it,
		// so the request is found again by a header only cllama sets.
		var k [12]byte
		_, _ = rand.Read(k[:])
		key := hex.EncodeToString(k[:])
		r.Header = r.Header.Clone()
		r.Header.Set(carrierHeader, key)
		as.carriers.Store(key, r.Context())
		defer as.carriers.Delete(key)
	}
	b.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), agentKey{}, as)))
}

// carrierHeader names, on a POST handed to the SDK, the key of its HTTP
// request's context (any value a client sent is replaced).
const carrierHeader = "X-Cllama-Carrier"

// Sessions is the number of open MCP sessions of agent id.
func (b *Broker) Sessions(id string) int {
	b.mu.Lock()
	as := b.agents[id]
	b.mu.Unlock()
	if as == nil {
		return 0
	}
	n := 0
	for range as.server.Sessions() {
		n++
	}
	return n
}

// Close closes every session.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, as := range b.agents {
		for ss := range as.server.Sessions() {
			_ = ss.Close()
		}
	}
}

func (b *Broker) serverFor(id string) *agentServer {
	b.mu.Lock()
	defer b.mu.Unlock()
	if as := b.agents[id]; as != nil {
		return as
	}
	as := &agentServer{b: b, id: id, lastUsed: map[string]time.Time{}, calls: make(chan struct{}, b.o.MaxCallsPerAgent),
		opening: make(chan struct{}, 1)}
	as.server = mcp.NewServer(&mcp.Implementation{Name: "cllama", Title: "cllama: this agent's governed pod tools", Version: b.o.Version}, &mcp.ServerOptions{
		Instructions: "Tools of the pod's services granted to this agent. Every call is checked against the tool's schema, " +
			"run with the pod's credentials and recorded for audit.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			as.touchNew(req.Session.ID())
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	as.server.AddReceivingMiddleware(as.intercept)
	b.agents[id] = as
	return as
}

// agentServer is one agent's MCP server: its tool list follows the
// agent's compiled context, its sessions are bounded.
type agentServer struct {
	b      *Broker
	id     string
	server *mcp.Server
	calls  chan struct{}
	// carriers maps a carrierHeader key to the context of the POST in
	// progress that carries it.
	carriers sync.Map
	// opening is held by the request that may open a session, from
	// makeRoom until the session exists: the bound holds however many
	// arrive at once.
	opening chan struct{}

	mu sync.Mutex
	// called are, per MCP session, the tools it called (tool policy's
	// session.called); bounded with the sessions.
	called   map[string][]string
	synced   *agentctx.Agent
	listed   []string // names registered on server
	digest   []byte   // of the registered definitions
	lastUsed map[string]time.Time
}

// current is the agent snapshot the server last synchronised with.
func (as *agentServer) current() *agentctx.Agent {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.synced
}

// sync makes the server's tool list the native tools of snapshot a. A
// snapshot is immutable, so an unchanged pointer means nothing to do; a
// reload that changes the list notifies open sessions (list_changed).
func (as *agentServer) sync(a *agentctx.Agent) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if as.synced == a {
		return
	}
	as.synced = a
	defs := make([]*mcp.Tool, 0, len(a.Native))
	for _, t := range a.Native {
		d, err := definition(t, a.NativeName(t.Name))
		if err != nil {
			as.b.rec.Emit(audit.Event{Type: audit.TypeManifestError, ClawID: as.id, Tool: t.Name, Error: "native tool not served on /mcp: " + err.Error()})
			continue
		}
		defs = append(defs, d)
	}
	digest, _ := json.Marshal(defs)
	if bytes.Equal(digest, as.digest) {
		return
	}
	if len(as.listed) > 0 {
		as.server.RemoveTools(as.listed...)
	}
	as.listed = as.listed[:0]
	for _, d := range defs {
		if err := addTool(as.server, d, as.handle); err != nil {
			as.b.rec.Emit(audit.Event{Type: audit.TypeManifestError, ClawID: as.id, Tool: d.Name, Error: "native tool not served on /mcp: " + err.Error()})
			continue
		}
		as.listed = append(as.listed, d.Name)
	}
	as.digest = digest
}

// addTool registers d, turning the SDK's panics on a definition it
// refuses into an error.
func addTool(s *mcp.Server, d *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.AddTool(d, h)
	return nil
}

// canonicalNameMeta is the _meta key that carries a listed tool's
// canonical name ("<service>.<tool>").
const canonicalNameMeta = "io.clawdapus/canonical-name"

// definition is what an MCP client sees of t: the compiled definition,
// never its execution, listed as name (the provider-safe alias: runners
// hand MCP tool names to the model as they are, and providers refuse a
// dot), with the canonical name as its title (unless it has one) and in
// _meta.
func definition(t *manifest.Tool, name string) (*mcp.Tool, error) {
	in, err := objectSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	d := &mcp.Tool{Name: name, Title: t.Name, Description: t.Description, InputSchema: in,
		Meta: mcp.Meta{canonicalNameMeta: t.Name}}
	if len(t.OutputSchema) > 0 {
		out, err := objectSchema(t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("outputSchema: %w", err)
		}
		d.OutputSchema = out
	}
	if a := t.Annotations; a != nil {
		ro := a.IsReadOnly()
		d.Annotations = &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: ro, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint != nil && *a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
		if a.Title != "" {
			d.Title = a.Title
		}
	}
	return d, nil
}

// objectSchema is a compiled schema with "type": "object" made explicit,
// as MCP requires of tool schemas (a compiled schema may leave it out).
func objectSchema(raw json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	if _, ok := m["type"]; ok {
		return raw, nil
	}
	m["type"] = json.RawMessage(`"object"`)
	return json.Marshal(m)
}

// touch records a request on an existing session (unknown ids are the
// SDK's to refuse and are not recorded).
func (as *agentServer) touch(sid string) {
	as.mu.Lock()
	defer as.mu.Unlock()
	if _, ok := as.lastUsed[sid]; ok {
		as.lastUsed[sid] = as.b.o.Now()
	}
}

func (as *agentServer) touchNew(sid string) {
	if sid == "" {
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.lastUsed[sid] = as.b.o.Now()
}

// makeRoom runs before a request that may open a session: at the bound,
// the least recently used session is closed (a runner that restarts
// without closing its sessions keeps working; the oldest goes). The
// caller holds as.opening until the request is served.
func (as *agentServer) makeRoom() {
	open := map[string]*mcp.ServerSession{}
	for ss := range as.server.Sessions() {
		open[ss.ID()] = ss
	}
	as.mu.Lock()
	for sid := range as.lastUsed {
		if open[sid] == nil {
			delete(as.lastUsed, sid)
			delete(as.called, sid)
		}
	}
	var victims []*mcp.ServerSession
	if excess := len(open) - as.b.o.MaxSessionsPerAgent + 1; excess > 0 {
		ids := make([]string, 0, len(open))
		for sid := range open {
			ids = append(ids, sid)
		}
		// Never-used (zero time) first, then the least recently used.
		sort.Slice(ids, func(i, j int) bool {
			ti, tj := as.lastUsed[ids[i]], as.lastUsed[ids[j]]
			if !ti.Equal(tj) {
				return ti.Before(tj)
			}
			return ids[i] < ids[j]
		})
		for _, sid := range ids[:excess] {
			victims = append(victims, open[sid])
			delete(as.lastUsed, sid)
			delete(as.called, sid)
		}
	}
	as.mu.Unlock()
	for _, ss := range victims {
		_ = ss.Close()
		as.b.rec.Emit(audit.Event{Type: audit.TypeError, ClawID: as.id, Format: history.FormatMCP,
			Error: fmt.Sprintf("MCP session closed: agent %s opened more than %d sessions (CLLAMA_MCP_MAX_SESSIONS); its least recently used one was closed", as.id, as.b.o.MaxSessionsPerAgent)})
	}
}

// intercept answers every tools/call itself: a name the agent holds as
// a native tool runs; any other is refused and audited (the SDK alone
// would answer an unregistered name with a protocol error nobody
// records).
func (as *agentServer) intercept(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				return as.handle(ctx, r)
			}
		}
		res, err := next(ctx, method, req)
		if method == "tools/list" && err == nil {
			if l, ok := res.(*mcp.ListToolsResult); ok {
				as.filterList(l, sessionID(req))
			}
		}
		return res, err
	}
}

// handle runs one tools/call.
func (as *agentServer) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b := as.b
	start := b.o.Now()
	id := b.o.NewID()
	a := as.current()
	name := req.Params.Name
	rawArgs := req.Params.Arguments // absent or null reads as {}
	// The call runs under the client's cancellation but none of the MCP
	// server's context values: the executor is itself an MCP client, and
	// must not speak to a service in the protocol version this request
	// was served in.
	callCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	if req.Extra != nil && req.Extra.Header != nil {
		if hctx, ok := as.carriers.Load(req.Extra.Header.Get(carrierHeader)); ok {
			defer context.AfterFunc(hctx.(context.Context), cancel)()
			// The call's span joins the request's (the runner's trace).
			callCtx = trace.ContextWithSpanContext(callCtx, trace.SpanContextFromContext(hctx.(context.Context)))
		}
	}
	ctx = callCtx
	tool, ok := a.NativeTool(name)
	var (
		env     toolexec.Envelope
		latency int64
		args    json.RawMessage
	)
	switch {
	case !ok:
		tool = mediatedTool(a, name)
		if tool != nil {
			env = toolexec.Fail(toolexec.CodeWrongMode, fmt.Sprintf("not executed: %s is granted to this agent as a mediated tool; cllama offers it to the model with each model request and runs the model's calls, it is not served on /mcp", name), 0)
		} else {
			env = toolexec.Fail(toolexec.CodeUnknownTool, fmt.Sprintf("unknown tool %q: it is not a native tool of this agent (tools/list names them)", name), 0)
		}
		args = quoteUnlessObject(rawArgs)
	default:
		var err error
		if args, err = wire.ObjectArguments(rawArgs); err != nil {
			env = toolexec.Fail(toolexec.CodeInvalidArguments, "invalid arguments: "+err.Error(), toolexec.RPCInvalidParams)
			args = quoteUnlessObject(rawArgs)
			break
		}
		select {
		case as.calls <- struct{}{}:
			if denied, ok := as.admit(a, tool, sessionID(req)); ok {
				<-as.calls
				env = denied
				break
			}
			policy := manifest.DefaultPolicy()
			if a.Tools != nil {
				policy = a.Tools.Policy.WithDefaults()
			}
			out := toolcall.Run(ctx, b.o.Runner, toolcall.Call{Agent: a, Tool: tool, Arguments: args, Policy: policy, Mode: manifest.ModeNative}, b.o.Now,
				func(p any) {
					b.rec.Emit(audit.Event{Type: audit.TypeError, ClawID: as.id, RequestID: id, Format: history.FormatMCP, Error: fmt.Sprintf("tool runner panic: %v", p)})
				})
			<-as.calls
			env, latency = out.Envelope, out.LatencyMS
		default:
			env = toolexec.Fail(toolexec.CodeTooManyCalls, fmt.Sprintf("not executed: this agent already has %d native tool calls in progress, the most cllama runs at once per agent; retry when one has finished", b.o.MaxCallsPerAgent), 0)
		}
	}
	res := result(tool, env)
	as.record(id, start, name, tool, args, env, latency, res)
	return res, nil
}

// mediatedTool returns a's mediated tool of that name (canonical, or as
// a provider-safe name reads it), if any.
func mediatedTool(a *agentctx.Agent, name string) *manifest.Tool {
	if a.Tools == nil {
		return nil
	}
	for i := range a.Tools.Tools {
		if t := &a.Tools.Tools[i]; (t.Name == name || toolname.Readable(t.Name) == name) && !t.Native() {
			return t
		}
	}
	return nil
}

// result is the MCP answer: the envelope (what a mediated call's model
// reads) as text, and, for a tool with an outputSchema, its data as
// structuredContent when it was not cut.
func result(tool *manifest.Tool, env toolexec.Envelope) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(toolcall.Encode(env))}}, IsError: !env.OK}
	if env.OK && !env.Truncated && tool != nil && len(tool.OutputSchema) > 0 && len(env.Data) > 0 {
		res.StructuredContent = env.Data
	}
	return res
}

// record writes the call's audit event and history entry: the fields of
// a mediated call, mode native.
func (as *agentServer) record(id string, start time.Time, name string, tool *manifest.Tool, args json.RawMessage, env toolexec.Envelope, latency int64, res *mcp.CallToolResult) {
	b := as.b
	content := toolcall.Encode(env)
	tc := history.ToolCall{Name: name, Arguments: args, Result: content, LatencyMS: latency, Mode: manifest.ModeNative}
	if tool != nil {
		tc.Name, tc.Service = tool.Name, tool.Execution.Service
		if executed := toolcall.Executed(args, as.id, tool); !bytes.Equal(executed, args) {
			tc.Arguments, tc.ModelArguments = executed, args
		}
	}
	b.rec.Emit(audit.Event{ClawID: as.id, Type: audit.TypeToolCall, RequestID: id, Format: history.FormatMCP,
		Tool: tc.Name, Service: tc.Service, Status: toolcall.Status(env), LatencyMS: audit.Ptr(latency), Mode: manifest.ModeNative})
	if !b.rec.HistoryOn() && !b.rec.HasSinks() {
		return
	}
	request, _ := json.Marshal(map[string]any{"method": "tools/call", "params": map[string]any{"name": name, "arguments": args}})
	response, _ := json.Marshal(res)
	e := history.Entry{
		ID: id, Timestamp: start.UTC(), AgentID: as.id, Pod: b.o.Pod, Format: history.FormatMCP,
		Status: history.StatusOK, StatusCode: http.StatusOK, LatencyMS: b.o.Now().Sub(start).Milliseconds(),
		Request: request, Response: response,
		ToolTrace: []history.Round{{Round: 0, ToolCalls: []history.ToolCall{tc}}},
	}
	if err := b.rec.Append(e); err != nil {
		b.rec.Emit(audit.Event{ClawID: as.id, Type: audit.TypeError, RequestID: id, Format: history.FormatMCP, Error: "session history: " + err.Error()})
	}
}

// quoteUnlessObject keeps a JSON object as it is and anything else as a
// JSON string, so a trace always holds valid JSON.
func quoteUnlessObject(raw json.RawMessage) json.RawMessage {
	if c, err := wire.ObjectArguments(raw); err == nil {
		return c
	}
	return wire.Quote(string(raw))
}

// sessionID is the MCP session a request came on ("" in the sessionless
// protocol: each request is its own session).
func sessionID(req mcp.Request) string {
	if req == nil {
		return ""
	}
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return ""
	}
	return ss.ID()
}

// maxCalledPerSession bounds what a session remembers for tool policy.
const maxCalledPerSession = 1024

// noteCalledLocked records that session sid called tool; as.mu is held.
func (as *agentServer) noteCalledLocked(sid, tool string) {
	if sid == "" {
		return
	}
	if _, open := as.lastUsed[sid]; !open {
		return // a session the broker does not track (closed)
	}
	if as.called == nil {
		as.called = map[string][]string{}
	}
	if c := as.called[sid]; len(c) < maxCalledPerSession && !slices.Contains(c, tool) {
		as.called[sid] = append(c, tool)
	}
}

// policyInput is what the agent's grant conditions see on /mcp: the
// clock, the feeds as last fetched for its model requests, and the tools
// this MCP session called.
func (as *agentServer) policyInput(a *agentctx.Agent, sid string) policy.Input {
	in := as.policyInputOutside(a)
	as.mu.Lock()
	in.Session = as.sessionLocked(sid)
	as.mu.Unlock()
	return in
}

// policyInputOutside is policyInput but for the session, which the
// caller reads under as.mu.
func (as *agentServer) policyInputOutside(a *agentctx.Agent) policy.Input {
	var feeds map[string]string
	if as.b.o.Feeds != nil {
		feeds = as.b.o.Feeds(a)
	}
	return toolcall.PolicyInput(as.b.o.Now(), a, feeds, policy.Session{})
}

// sessionLocked is what session sid called; as.mu is held.
func (as *agentServer) sessionLocked(sid string) policy.Session {
	called := slices.Clone(as.called[sid])
	return policy.Session{Called: called, Rounds: int64(len(called))}
}

// filterList drops from a tools/list answer the tools whose conditions do
// not hold now.
func (as *agentServer) filterList(l *mcp.ListToolsResult, sid string) {
	a := as.current()
	if a == nil || a.Tools == nil || len(a.Tools.Rules) == 0 {
		return
	}
	r := as.b.policy.For(a.Tools, as.policyInput(a, sid))
	kept := l.Tools[:0]
	for _, d := range l.Tools {
		if t, ok := a.NativeTool(d.Name); ok {
			if allowed, _ := r.Allowed(t); !allowed {
				continue
			}
		}
		kept = append(kept, d)
	}
	l.Tools = kept
}

// admit checks tool's conditions for a call on session sid and, when
// they hold, records the call as made before any other call of the
// session is judged: concurrent and batched calls of one session are
// admitted one after another, each seeing those admitted before it (a
// "once" rule runs its tool once). denied is the answer to a call whose
// conditions do not hold.
func (as *agentServer) admit(a *agentctx.Agent, tool *manifest.Tool, sid string) (env toolexec.Envelope, denied bool) {
	ruled := toolcall.Ruled(a, tool)
	var in policy.Input
	if ruled {
		in = as.policyInputOutside(a)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if ruled {
		in.Session = as.sessionLocked(sid)
		if ok, d := as.b.policy.For(a.Tools, in).Allowed(tool); !ok {
			return toolcall.PolicyDenied(d), true
		}
	}
	as.noteCalledLocked(sid, tool.Name)
	return toolexec.Envelope{}, false
}
