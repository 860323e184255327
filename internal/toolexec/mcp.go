package toolexec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP execution (spec 000 Phase 5; issue "Executing a call"): a tool with
// transport "mcp" is a tools/call of execution.tool_name on the Streamable
// HTTP endpoint base_url + path. Sessions are kept per (agent, service,
// endpoint, credential) and re-established once when the server has
// forgotten them.

var (
	errPoolClosed      = errors.New("executor closed")
	errMessageTooLarge = errors.New("MCP message exceeds the response bound")
)

// mcpPool holds open MCP client sessions. Safe for concurrent use.
type mcpPool struct {
	e      *Executor
	client *mcp.Client

	mu       sync.Mutex
	sessions map[string]*mcpEntry
	closed   bool
	closing  sync.WaitGroup // background session closes
}

// mcpEntry is one session slot. lock (a one-slot channel, so waiting
// honours the caller's context) is held while the session is being
// connected or replaced; calls themselves run concurrently on cs.
type mcpEntry struct {
	lock     chan struct{}
	cs       *mcp.ClientSession // guarded by lock
	lastUsed atomic.Int64       // unix nanoseconds
	inflight atomic.Int32       // calls using cs; such entries are never evicted
}

func newMCPPool(e *Executor) *mcpPool {
	return &mcpPool{
		e: e,
		client: mcp.NewClient(&mcp.Implementation{
			Name:    e.opts.MCPClientName,
			Version: e.opts.MCPClientVersion,
		}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}),
		sessions: make(map[string]*mcpEntry),
	}
}

// acquire returns the session for key, connecting one if needed. The
// caller must call release(ent) when its call is done.
func (p *mcpPool) acquire(ctx context.Context, key string, connect func(context.Context) (*mcp.ClientSession, error)) (*mcpEntry, *mcp.ClientSession, error) {
	now := time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, errPoolClosed
	}
	ent := p.sessions[key]
	if ent == nil {
		p.evictLocked(now)
		ent = &mcpEntry{lock: make(chan struct{}, 1)}
		p.sessions[key] = ent
	}
	ent.lastUsed.Store(now.UnixNano())
	ent.inflight.Add(1)
	p.mu.Unlock()

	select {
	case ent.lock <- struct{}{}:
	case <-ctx.Done():
		ent.inflight.Add(-1)
		return nil, nil, ctx.Err()
	}
	defer func() { <-ent.lock }()
	if ent.cs != nil {
		return ent, ent.cs, nil
	}
	cs, err := connect(ctx)
	if err != nil {
		ent.inflight.Add(-1)
		return nil, nil, err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		ent.inflight.Add(-1)
		_ = cs.Close()
		return nil, nil, errPoolClosed
	}
	ent.cs = cs
	return ent, cs, nil
}

func (p *mcpPool) release(ent *mcpEntry) {
	ent.lastUsed.Store(time.Now().UnixNano())
	ent.inflight.Add(-1)
}

// invalidate drops cs from ent (if it is still the entry's session) and
// closes it in the background.
func (p *mcpPool) invalidate(ent *mcpEntry, cs *mcp.ClientSession) {
	ent.lock <- struct{}{}
	if ent.cs == cs {
		ent.cs = nil
	}
	<-ent.lock
	p.closeAsync(cs)
}

func (p *mcpPool) closeAsync(cs *mcp.ClientSession) {
	if cs == nil {
		return
	}
	p.closing.Add(1)
	go func() {
		defer p.closing.Done()
		_ = cs.Close()
	}()
}

// evictLocked closes idle sessions and, at the bound, the least recently
// used one that no call is using. p.mu is held.
func (p *mcpPool) evictLocked(now time.Time) {
	idle := p.e.opts.MCPSessionIdleTimeout
	var lruKey string
	var lruAt int64
	for k, ent := range p.sessions {
		if ent.inflight.Load() > 0 {
			continue
		}
		at := ent.lastUsed.Load()
		if now.Sub(time.Unix(0, at)) > idle {
			p.dropLocked(k, ent)
			continue
		}
		if lruKey == "" || at < lruAt {
			lruKey, lruAt = k, at
		}
	}
	if len(p.sessions) >= p.e.opts.MaxMCPSessions && lruKey != "" {
		if ent, ok := p.sessions[lruKey]; ok {
			p.dropLocked(lruKey, ent)
		}
	}
}

func (p *mcpPool) dropLocked(key string, ent *mcpEntry) {
	delete(p.sessions, key)
	select {
	case ent.lock <- struct{}{}:
		cs := ent.cs
		ent.cs = nil
		<-ent.lock
		p.closeAsync(cs)
	default:
		// Being connected right now: its caller will use it once; it is
		// no longer reachable from the pool and is closed on its next
		// failure or when the executor closes.
	}
}

// close closes every session and waits for the closes to finish.
func (p *mcpPool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.closing.Wait()
		return
	}
	p.closed = true
	sessions := p.sessions
	p.sessions = map[string]*mcpEntry{}
	p.mu.Unlock()
	for _, ent := range sessions {
		ent.lock <- struct{}{}
		cs := ent.cs
		ent.cs = nil
		<-ent.lock
		p.closeAsync(cs)
	}
	p.closing.Wait()
}

// sessionKey identifies a reusable session. The credential is part of it
// (as a digest) so a rotated token never rides on an old session.
func sessionKey(agentID, service, endpoint string, auth *manifest.Auth) string {
	var fp string
	if auth != nil && auth.Token != "" {
		sum := sha256.Sum256([]byte(auth.Token))
		fp = hex.EncodeToString(sum[:8])
	}
	return agentID + "\x00" + service + "\x00" + endpoint + "\x00" + fp
}

// mcpEndpoint is the Streamable HTTP endpoint of a tool.
func mcpEndpoint(exec *manifest.Execution) string {
	return strings.TrimRight(exec.BaseURL, "/") + exec.Path
}

// doMCP makes one attempt: tools/call on a pooled session, re-established
// once if the server lost it (HTTP 404 for the session id, or the
// connection closed under it) — the server did not run the call then, so
// the retry is safe for any tool.
func (e *Executor) doMCP(ctx context.Context, c Call, args map[string]any, auth *manifest.Auth) (result, *failure) {
	exec := &c.Tool.Execution
	svc := exec.Service
	endpoint := mcpEndpoint(exec)
	key := sessionKey(c.AgentID, svc, endpoint, auth)
	connect := func(ctx context.Context) (*mcp.ClientSession, error) {
		return e.connectMCP(ctx, endpoint, c.AgentID, auth)
	}
	for try := 0; ; try++ {
		ent, cs, err := e.mcp.acquire(ctx, key, connect)
		if err != nil {
			if errors.Is(err, errPoolClosed) {
				return result{}, &failure{code: CodeUnavailable, message: "the tool executor is shut down"}
			}
			return result{}, e.mcpFailure(err, svc, true)
		}
		var overflow atomic.Bool
		res, err := cs.CallTool(context.WithValue(ctx, overflowKey{}, &overflow), &mcp.CallToolParams{Name: exec.ToolName, Arguments: args})
		e.mcp.release(ent)
		if err == nil {
			return e.mcpResult(res, svc, c.MaxResultBytes)
		}
		if overflow.Load() {
			// The SDK reports a cut stream only as a missing response.
			err = errMessageTooLarge
		}
		if serverError(err) != nil || ctx.Err() != nil || err == errMessageTooLarge {
			// The session is fine: the server answered, or we gave up.
			return result{}, e.mcpFailure(err, svc, false)
		}
		e.mcp.invalidate(ent, cs)
		if try == 0 && sessionLost(err) {
			continue
		}
		return result{}, e.mcpFailure(err, svc, false)
	}
}

// sessionLost reports whether err means the server no longer knows the
// session (it restarted or expired it).
func sessionLost(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed) ||
		strings.Contains(err.Error(), "session not found")
}

// codeTransportRejected is the SDK's code for a request its transport
// could not deliver; it is not the server's answer.
const codeTransportRejected = -32005

// serverError returns the JSON-RPC error the server answered with, if err
// carries one.
func serverError(err error) *jsonrpc.Error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code != codeTransportRejected {
		return rpcErr
	}
	return nil
}

// mcpFailure maps an SDK error to a failure, in our own words.
func (e *Executor) mcpFailure(err error, svc string, connecting bool) *failure {
	rpcErr := serverError(err)
	switch {
	case rpcErr != nil && rpcErr.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(rpcErr.Message, "unknown tool"):
		// The compiled tool_name is not on the server: not the model's fault.
		return &failure{code: CodeMisconfigured, message: fmt.Sprintf("MCP server %s does not offer this tool (%s)", svc, snippet(rpcErr.Message, 128))}
	case rpcErr != nil && rpcErr.Code == jsonrpc.CodeInvalidParams:
		return &failure{code: CodeInvalidArguments, message: "the MCP server rejected the arguments: " + snippet(rpcErr.Message, e.opts.ErrorSnippetBytes), rpc: RPCInvalidParams}
	case rpcErr != nil:
		return &failure{code: CodeServiceError, message: fmt.Sprintf("MCP server %s answered error %d: %s", svc, rpcErr.Code, snippet(rpcErr.Message, e.opts.ErrorSnippetBytes))}
	case errors.Is(err, errMessageTooLarge):
		return &failure{code: CodeServiceError, message: fmt.Sprintf("MCP server %s sent a message over %d bytes", svc, e.opts.MaxResponseBytes)}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return &failure{code: CodeTimeout, message: fmt.Sprintf("MCP server %s did not answer in time", svc), rpc: RPCTimeout}
	}
	what := "the call to"
	if connecting {
		what = "starting a session with"
	}
	return &failure{code: CodeUnavailable, message: fmt.Sprintf("%s MCP server %s failed: %s", what, svc, mcpReason(err)), transient: true}
}

// mcpReason names an SDK transport error without addresses.
func mcpReason(err error) string {
	s := err.Error()
	for _, known := range []string{
		"connection refused", "connection reset", "no such host", "session not found",
		"Not Found", "Unauthorized", "Forbidden", "Internal Server Error",
		"Bad Gateway", "Service Unavailable", "Gateway Timeout", "Method Not Allowed",
		"unsupported content type", "unsupported protocol version",
	} {
		if strings.Contains(s, known) {
			return strings.ToLower(known)
		}
	}
	return netReason(err)
}

// mcpResult maps a tools/call result (issue "Executing a call"): isError
// becomes tool_error with the text; otherwise structuredContent when
// present, else the text (a single text block that is JSON is used as
// JSON), else the content array.
func (e *Executor) mcpResult(res *mcp.CallToolResult, svc string, maxBytes int) (result, *failure) {
	if res.IsError {
		text, _ := contentText(res.Content)
		if text == "" {
			text = "the tool reported an error"
		}
		limit := max(256, min(maxBytes-128, 8192))
		return result{}, &failure{code: CodeToolError, message: snippet(text, limit), deliberate: true}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if canon, ok := jsontop.Canonical(b); err == nil && ok {
			return result{json: canon}, nil
		}
	}
	if len(res.Content) == 0 {
		return result{json: jsonNull}, nil
	}
	if text, allText := contentText(res.Content); allText {
		if len(res.Content) == 1 {
			if canon, ok := jsontop.Canonical([]byte(text)); ok {
				return result{json: canon}, nil
			}
		}
		return result{text: text, isText: true}, nil
	}
	b, err := json.Marshal(res.Content)
	if canon, ok := jsontop.Canonical(b); err == nil && ok {
		return result{json: canon}, nil
	}
	return result{}, &failure{code: CodeServiceError, message: fmt.Sprintf("MCP server %s returned content that cannot be encoded", svc)}
}

// contentText joins the text blocks of content with newlines and reports
// whether every block was text.
func contentText(content []mcp.Content) (string, bool) {
	var parts []string
	all := true
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		} else {
			all = false
		}
	}
	return strings.Join(parts, "\n"), all
}

// connectMCP starts a session. Its HTTP client adds the credential and
// X-Claw-ID to every request and bounds every response body.
func (e *Executor) connectMCP(ctx context.Context, endpoint, agentID string, auth *manifest.Auth) (*mcp.ClientSession, error) {
	hc := &http.Client{
		Transport: &mcpHeaders{base: e.opts.Transport, agentID: agentID, auth: auth, userAgent: e.opts.UserAgent, limit: e.opts.MaxResponseBytes},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	t := &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: hc,
		// Calls need only their own responses; no standing GET stream.
		DisableStandaloneSSE: true,
		MaxEventSize:         int(e.opts.MaxResponseBytes),
	}
	var opts *mcp.ClientSessionOptions
	if e.opts.MCPProtocolVersion != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: e.opts.MCPProtocolVersion}
	}
	return e.mcp.client.Connect(ctx, t, opts)
}

// mcpHeaders is the RoundTripper of MCP sessions.
type mcpHeaders struct {
	base      http.RoundTripper
	agentID   string
	auth      *manifest.Auth
	userAgent string
	limit     int64
}

func (t *mcpHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	applyAuth(r.Header, t.auth)
	r.Header.Set("X-Claw-ID", t.agentID)
	r.Header.Set("User-Agent", t.userAgent)
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	flag, _ := req.Context().Value(overflowKey{}).(*atomic.Bool)
	resp.Body = &boundedBody{rc: resp.Body, left: t.limit, overflow: flag}
	return resp, nil
}

// overflowKey marks a call's context with the flag its response body sets
// when it goes past the bound.
type overflowKey struct{}

// boundedBody fails a read that goes past its bound instead of buffering
// without end.
type boundedBody struct {
	rc       io.ReadCloser
	left     int64
	overflow *atomic.Bool // may be nil
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			if b.overflow != nil {
				b.overflow.Store(true)
			}
			return 0, errMessageTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
