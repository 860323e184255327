package broker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/toolname"
	"github.com/clawdapus/clawgo/internal/wire"
)

// tools/call: every call is answered by cllama, through the governed
// call path (internal/toolcall).

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
	if hctx := carriedRequest(req); hctx != nil {
		defer context.AfterFunc(hctx, cancel)()
		// The call's span joins the request's (the runner's trace).
		callCtx = trace.ContextWithSpanContext(callCtx, trace.SpanContextFromContext(hctx))
	}
	ctx = callCtx
	tool, ok := as.b.nativeTool(a, name)
	var (
		env     toolexec.Envelope
		latency int64
		args    json.RawMessage
		kept    *toolcall.Kept
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
			out := toolcall.Run(ctx, b.o.Runner, toolcall.Call{Agent: a, Tool: tool, Arguments: args, Policy: policy, Mode: manifest.ModeNative,
				Results: b.results(as.id, sessionID(req))}, b.o.Now,
				func(p any) {
					b.rec.Emit(audit.Event{Type: audit.TypeError, ClawID: as.id, RequestID: id, Format: history.FormatMCP, Error: fmt.Sprintf("tool runner panic: %v", p)})
				})
			<-as.calls
			env, latency, kept = out.Envelope, out.LatencyMS, out.Kept
		default:
			env = toolexec.Fail(toolexec.CodeTooManyCalls, fmt.Sprintf("not executed: this agent already has %d native tool calls in progress, the most cllama runs at once per agent; retry when one has finished", b.o.MaxCallsPerAgent), 0)
		}
	}
	res := result(tool, env)
	as.record(id, start, name, tool, args, env, latency, res, kept)
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
	if env.ResultHandle != "" {
		res.Content = append(res.Content, resultLink(env))
	}
	return res
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
