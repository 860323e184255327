package toolexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/h1"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/tracing"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Codes this package adds to the ones in envelope.go.
const (
	// CodeInvalidResult: the service answered, but its result does not
	// match the tool's outputSchema. The data is withheld.
	CodeInvalidResult = "invalid_result"
	// CodeMisconfigured: the tool's compiled entry cannot be executed (its
	// inputSchema does not compile, its transport is unknown). Retrying
	// will not help; the operator must fix the manifest.
	CodeMisconfigured = "tool_misconfigured"
)

// Defaults for Options' zero values.
const (
	DefaultMaxResponseBytes      = 4 << 20
	DefaultErrorSnippetBytes     = 512
	DefaultRetryBaseBackoff      = 100 * time.Millisecond
	DefaultRetryMaxBackoff       = 2 * time.Second
	DefaultMaxMCPSessions        = 256
	DefaultMCPSessionIdleTimeout = 10 * time.Minute
	DefaultMaxSchemas            = 1024
	DefaultMCPClientName         = "cllama"
	DefaultMCPClientVersion      = "0.1.0"
	DefaultUserAgent             = "cllama-toolexec"
)

// Options configures an Executor. The zero value gives the defaults noted
// on each field.
type Options struct {
	// Transport carries HTTP calls and MCP sessions. Default: a dedicated
	// h1.Transport (cleartext services, called on the caller's goroutine)
	// over an *http.Transport (https services), both ignoring proxy
	// environment variables (services are pod-internal), keeping up to 64
	// idle connections per host for 90s; TLS handshakes are bounded to
	// 10s. Redirects are never followed whatever the transport: a 3xx is
	// a service_error.
	Transport http.RoundTripper
	// NetHTTP makes the default Transport send every call through its
	// net/http fallback (cllama's CLLAMA_UPSTREAM_CLIENT=net/http).
	NetHTTP bool
	// MaxResponseBytes bounds the bytes read from one service response,
	// well above any max_tool_result_bytes. Default 4 MiB. A longer HTTP
	// body is cut (and reported truncated); a longer MCP message fails the
	// call with service_error.
	MaxResponseBytes int64
	// DefaultTimeout bounds a call when neither Call.Timeout nor the tool's
	// timeout_ms is set. Default 30s (spec 000 timeout_per_tool_ms).
	DefaultTimeout time.Duration
	// RetryBaseBackoff is the wait before the second attempt of a retried
	// call; exponential backoff doubles it per attempt. Default 100ms.
	RetryBaseBackoff time.Duration
	// RetryMaxBackoff caps one wait between attempts. Default 2s.
	RetryMaxBackoff time.Duration
	// ErrorSnippetBytes bounds how much of a failing service's body a
	// service_error message quotes. Default 512.
	ErrorSnippetBytes int
	// UserAgent is sent on HTTP calls. Default "cllama-toolexec".
	UserAgent string
	// MCPClientName and MCPClientVersion are announced when an MCP session
	// is initialized. Defaults "cllama" and "0.1.0".
	MCPClientName    string
	MCPClientVersion string
	// MCPProtocolVersion, when set, is the MCP protocol version offered at
	// session start. Default: the SDK's latest (servers negotiate down).
	MCPProtocolVersion string
	// MaxMCPSessions bounds open MCP sessions; the least recently used is
	// closed beyond it. Default 256.
	MaxMCPSessions int
	// MCPSessionIdleTimeout closes sessions unused this long. Default 10m.
	MCPSessionIdleTimeout time.Duration
	// MaxSchemas bounds the compiled-schema cache. Default 1024.
	MaxSchemas int
}

func (o Options) withDefaults() Options {
	if o.Transport == nil {
		dial := (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		o.Transport = &h1.Transport{
			Disabled: o.NetHTTP,
			Fallback: &http.Transport{
				Proxy:                 nil,
				DialContext:           dial,
				ForceAttemptHTTP2:     true,
				MaxIdleConns:          256,
				MaxIdleConnsPerHost:   64,
				IdleConnTimeout:       90 * time.Second,
				TLSHandshakeTimeout:   10 * time.Second,
				ExpectContinueTimeout: time.Second,
			},
			DialContext:         dial,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			// net/http's sizes: a held MCP session costs what it did.
			ReadBufferSize:  4 << 10,
			WriteBufferSize: 4 << 10,
		}
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = time.Duration(manifest.DefaultTimeoutPerToolMS) * time.Millisecond
	}
	if o.RetryBaseBackoff <= 0 {
		o.RetryBaseBackoff = DefaultRetryBaseBackoff
	}
	if o.RetryMaxBackoff <= 0 {
		o.RetryMaxBackoff = DefaultRetryMaxBackoff
	}
	if o.ErrorSnippetBytes <= 0 {
		o.ErrorSnippetBytes = DefaultErrorSnippetBytes
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.MCPClientName == "" {
		o.MCPClientName = DefaultMCPClientName
	}
	if o.MCPClientVersion == "" {
		o.MCPClientVersion = DefaultMCPClientVersion
	}
	if o.MaxMCPSessions <= 0 {
		o.MaxMCPSessions = DefaultMaxMCPSessions
	}
	if o.MCPSessionIdleTimeout <= 0 {
		o.MCPSessionIdleTimeout = DefaultMCPSessionIdleTimeout
	}
	if o.MaxSchemas <= 0 {
		o.MaxSchemas = DefaultMaxSchemas
	}
	return o
}

// Executor runs managed tool calls over HTTP and MCP. It is safe for
// concurrent use; Close releases its MCP sessions.
//
// Every outcome is an Envelope. Failures carry one of these codes:
//
//	invalid_arguments  -32602  not a JSON object, inputSchema violation, a
//	                           bad path value; the service was not called
//	                           (or an MCP server rejected the arguments)
//	timeout            -32014  the tool's timeout (timeout_ms, else the
//	                           policy's) or the caller's deadline passed
//	canceled                   the caller went away
//	service_error              non-2xx HTTP status (with a bounded, scrubbed
//	                           snippet of the body), an MCP JSON-RPC error,
//	                           an MCP message over MaxResponseBytes
//	unavailable                the service could not be reached
//	tool_error                 an MCP result with isError, with its text
//	invalid_result             the result does not match outputSchema
//	tool_misconfigured         the manifest entry cannot be executed
//	unknown_tool               Call.Tool is nil
//
// Success data is the service's JSON (compacted), or its text as a JSON
// string, or null for an empty answer; MCP results give structuredContent,
// else their text (a lone text block that is JSON is used as JSON), else
// the content array. Data over Call.MaxResultBytes is cut (see bound).
type Executor struct {
	opts    Options
	client  *http.Client
	schemas *schemaCache
	mcp     *mcpPool
}

var _ Runner = (*Executor)(nil)

// New returns an Executor configured by opts.
func New(opts Options) *Executor {
	opts = opts.withDefaults()
	// Service calls carry the agent's trace context when tracing is on.
	opts.Transport = tracing.Transport(opts.Transport)
	e := &Executor{
		opts: opts,
		client: &http.Client{
			Transport: opts.Transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		schemas: newSchemaCache(opts.MaxSchemas),
	}
	e.mcp = newMCPPool(e)
	return e
}

// Close closes every MCP session. Calls after Close that need MCP fail
// with unavailable; HTTP calls still work.
func (e *Executor) Close() error {
	e.mcp.close()
	return nil
}

// failure is why one attempt did not produce a result.
type failure struct {
	code    string
	message string
	rpc     int
	// transient failures (connection errors, 502/503/504) may be retried.
	transient bool
	// deliberate messages are the tool's own words to the model (an MCP
	// isError text): only this call's known secrets and addresses are
	// removed from them, not every URL.
	deliberate bool
}

// Run executes one call and always returns an envelope; it never panics on
// model input and never lets a service's address or credential into a
// message. The order is fixed: arguments are decoded, claw_id forced,
// validated against inputSchema (the service is not called on a
// violation), the call runs under its timeout (with retries when allowed),
// the result is checked against outputSchema, then bounded.
// Bounded implements Bounded: an HTTP call runs under its context from
// the dial to the last byte read, so it returns by the deadline. MCP
// calls go through a session the SDK holds, and stay guarded.
func (e *Executor) Bounded(c Call) bool {
	if c.Tool == nil {
		return true // answered at once
	}
	t := c.Tool.Execution.Transport
	return t == manifest.TransportHTTP || t == ""
}

func (e *Executor) Run(ctx context.Context, c Call) Envelope {
	if c.Tool == nil {
		return Fail(CodeUnknownTool, "no managed tool was given", 0)
	}
	tool := c.Tool
	exec := &tool.Execution
	auth := c.Auth
	if auth == nil {
		auth = exec.Auth
	}
	sc := newScrubber(exec, auth)
	// The bounds are the governed call's (internal/toolcall decides them
	// from the tool and the agent's policy); these are only guards for a
	// Call made without them.
	maxBytes := c.MaxResultBytes
	if maxBytes <= 0 {
		maxBytes = manifest.DefaultMaxToolResultBytes
		c.MaxResultBytes = maxBytes
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = e.opts.DefaultTimeout
	}

	args, err := decodeArguments(c.Arguments)
	if err != nil {
		return Fail(CodeInvalidArguments, err.Error(), RPCInvalidParams)
	}
	if len(tool.InputSchema) > 0 {
		in := e.schemas.get(tool.InputSchema)
		if in.err != nil {
			return Fail(CodeMisconfigured, fmt.Sprintf("tool %s has an inputSchema that does not compile", tool.Name), 0)
		}
		forceClawID(args, c.AgentID, in.declaresClawID)
		if err := in.sch.Validate(map[string]any(args)); err != nil {
			return Fail(CodeInvalidArguments, "invalid arguments: "+describeViolation(err), RPCInvalidParams)
		}
	} else {
		forceClawID(args, c.AgentID, false)
	}

	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var attempt func(context.Context) (result, *failure)
	switch exec.Transport {
	case manifest.TransportHTTP, "":
		req, err := e.prepareHTTP(c, args)
		if err != nil {
			var ae *argError
			if errors.As(err, &ae) {
				return Fail(CodeInvalidArguments, "invalid arguments: "+sc.scrub(ae.msg), RPCInvalidParams)
			}
			return Fail(CodeMisconfigured, sc.scrub(err.Error()), 0)
		}
		attempt = func(ctx context.Context) (result, *failure) { return e.doHTTP(ctx, req, c, auth) }
	case manifest.TransportMCP:
		if exec.ToolName == "" {
			return Fail(CodeMisconfigured, fmt.Sprintf("tool %s names no MCP tool", tool.Name), 0)
		}
		attempt = func(ctx context.Context) (result, *failure) { return e.doMCP(ctx, c, args, auth) }
	default:
		return Fail(CodeMisconfigured, fmt.Sprintf("tool %s has an unsupported transport", tool.Name), 0)
	}

	res, f, attempts := e.withRetry(callCtx, tool, attempt)
	if f != nil {
		switch {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
			return Fail(CodeCanceled, fmt.Sprintf("the call to %s was canceled", tool.Name), 0)
		case ctx.Err() != nil:
			// The caller's own deadline (the turn's total budget) ran out.
			return Fail(CodeTimeout, fmt.Sprintf("the time budget ran out before service %s answered", serviceName(exec)), RPCTimeout)
		case callCtx.Err() != nil:
			return Fail(CodeTimeout, fmt.Sprintf("service %s did not respond within %s", serviceName(exec), roundDuration(timeout)), RPCTimeout)
		}
		msg := f.message
		if attempts > 1 {
			msg += fmt.Sprintf(" (after %d attempts)", attempts)
		}
		if f.deliberate {
			return Fail(f.code, sc.scrubKnown(msg), f.rpc)
		}
		return Fail(f.code, sc.scrub(msg), f.rpc)
	}

	// The outputSchema is a check on the service, not on the model: a
	// result cut at the read bound cannot be checked, and an outputSchema
	// that does not compile is skipped rather than failing good answers.
	if len(tool.OutputSchema) > 0 && !res.cut {
		out := e.schemas.get(tool.OutputSchema)
		if out.err == nil {
			if err := out.sch.Validate(res.value()); err != nil {
				return Fail(CodeInvalidResult, sc.scrub("the result does not match the tool's outputSchema: "+describeViolation(err)), 0)
			}
		}
	}
	return bound(sc.redact(res), maxBytes)
}

// withRetry runs attempt, retrying transient failures when the tool allows
// it: execution.retry is set and the tool is read-only or idempotent
// (retrying a side effect could repeat it). Waits grow exponentially (or
// stay fixed for backoff "fixed") and never outlast ctx: when the next
// wait would pass the deadline, the last failure is returned.
func (e *Executor) withRetry(ctx context.Context, tool *manifest.Tool, attempt func(context.Context) (result, *failure)) (result, *failure, int) {
	maxAttempts := 1
	if r := tool.Execution.Retry; r != nil && r.MaxAttempts > 1 && tool.Annotations.IsIdempotent() {
		maxAttempts = min(r.MaxAttempts, 10)
	}
	for n := 1; ; n++ {
		res, f := attempt(ctx)
		if f == nil || !f.transient || n >= maxAttempts || ctx.Err() != nil {
			return res, f, n
		}
		wait := e.backoff(tool.Execution.Retry.Backoff, n)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			return res, f, n
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, f, n
		case <-t.C:
		}
	}
}

// backoff is the wait after the n-th failed attempt.
func (e *Executor) backoff(kind string, n int) time.Duration {
	d := e.opts.RetryBaseBackoff
	if kind != "fixed" {
		for i := 1; i < n && d < e.opts.RetryMaxBackoff; i++ {
			d *= 2
		}
	}
	return min(d, e.opts.RetryMaxBackoff)
}

// value returns the result as a Go value for output-schema validation.
func (r result) value() any {
	if r.isText {
		return r.text
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.json))
	if err != nil {
		return nil
	}
	return v
}

// roundDuration prints a timeout compactly: 30s, 1.5s, 250ms.
func roundDuration(d time.Duration) string {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// netReason names a transport error without its addresses.
func netReason(err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		return "name lookup failed"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.As(err, &opErr):
		s := opErr.Err.Error()
		switch {
		case strings.Contains(s, "refused"):
			return "connection refused"
		case strings.Contains(s, "reset"):
			return "connection reset"
		case strings.Contains(s, "timeout"):
			return "connection timed out"
		case strings.Contains(s, "unreachable"):
			return "network unreachable"
		}
		return "network error (" + opErr.Op + ")"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the service"
	}
	s := err.Error()
	switch {
	case strings.Contains(s, "EOF"):
		return "connection closed by the service"
	case strings.Contains(s, "tls:") || strings.Contains(s, "x509"):
		return "TLS handshake failed"
	}
	return "transport error"
}

// jsonNull is the data of an empty answer.
var jsonNull = json.RawMessage("null")
