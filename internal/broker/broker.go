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
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/toolexec"
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

// Options configure a Broker.
type Options struct {
	// Runner executes calls (the executor the model loop uses). Required.
	Runner toolexec.Runner
	// Recorder receives one tool_call event and one history entry per
	// call: cllama's one recorder, which writes the audit log and session
	// history and feeds metrics and traces. Nil records nothing.
	Recorder *recorder.Recorder
	// Feeds returns the agent's feeds as last fetched, by name (feeds'
	// Decorator.Cached), for tool policy. Nil: none.
	Feeds func(a *agentctx.Agent) map[string]string
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
	// Results, when set, keeps native results over the cap whole behind a
	// handle (a resource_link claw-result://<handle> beside the head) and
	// lists claw.read_result for every agent with a native tool; nil cuts
	// such results.
	Results resultstore.Store
	// Approvals, when set, holds calls of tools with approvals for a
	// person's decision; the tools/call waits. Nil: such calls are not
	// executed (approval_lost).
	Approvals *approvals.Manager
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
	b := &Broker{o: o, rec: o.Recorder, policy: policy.NewEvaluator(), agents: map[string]*agentServer{}}
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
		if sessionless(r.Header.Get("Mcp-Protocol-Version")) && r.Header.Get("Mcp-Session-Id") == "" {
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
		return &auth.TokenInfo{UserID: as.id, Extra: map[string]any{requestKey: ctx}}, nil
	}
	b.handler = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sdk)
	return b
}

type agentKey struct{}

// sessionlessProtocol is the first MCP protocol version without the
// initialize handshake and its sessions.
var sessionlessProtocol = time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)

// sessionless reports whether MCP protocol version v (a date,
// "2026-07-28") is sessionlessProtocol or later; a version that is not a
// date is not (the SDK then answers it with the protocols it knows).
func sessionless(v string) bool {
	d, err := time.Parse(time.DateOnly, v)
	return err == nil && !d.Before(sessionlessProtocol)
}

// ServeAgent serves one MCP request of an authenticated agent a.
func (b *Broker) ServeAgent(w http.ResponseWriter, r *http.Request, a *agentctx.Agent) {
	as := b.serverFor(a.ID)
	as.sync(a)
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		as.touch(sid)
	} else if r.Method == http.MethodPost && !sessionless(r.Header.Get("Mcp-Protocol-Version")) {
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
	b.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), agentKey{}, as)))
}

// requestKey is where the token info the SDK hands each message (as
// RequestExtra.TokenInfo) carries the context of the HTTP request that
// brought it: a call ends when that request does, although the handshake
// protocols' SDK handler runs calls detached from it.
const requestKey = "cllama.request"

// carriedRequest is the context of the HTTP request that carried req,
// or nil.
func carriedRequest(req *mcp.CallToolRequest) context.Context {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return nil
	}
	ctx, _ := req.Extra.TokenInfo.Extra[requestKey].(context.Context)
	return ctx
}

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
