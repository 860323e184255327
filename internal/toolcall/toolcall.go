// Package toolcall runs one governed managed call the way every mode
// does: the call is built from the agent's compiled context (the policy's
// per-tool timeout unless the tool sets its own, the result size cap, the
// agent's projected service credential), handed to a toolexec.Runner
// under a bound that holds even when the Runner ignores its context, and
// its envelope checked before anyone sees it. Mediated calls
// (internal/mediate, the model loop) and native calls (internal/broker,
// cllama's MCP endpoint) both go through Run, so a rule fixed here holds
// for both.
//
// It owns no protocol: what a call looks like to a model or an MCP
// client, duplicates, rounds and budgets belong to the callers.
package toolcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/tracing"
	"github.com/clawdapus/clawgo/internal/wire"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Grace is how long past a call's own timeout Run waits for a Runner
// that ignores its context, so a misbehaving Runner cannot hang a caller.
const Grace = 2 * time.Second

// Call is one call to run.
type Call struct {
	Agent *agentctx.Agent
	Tool  *manifest.Tool
	// Arguments is the JSON object the caller (a model, an MCP client)
	// sent, already checked to be an object (wire.ObjectArguments).
	Arguments json.RawMessage
	Policy    manifest.Policy
	// Mode is how the caller reached the tool (manifest.ModeMediated or
	// ModeNative), for traces.
	Mode string
	// Results, when set, keeps a result over the cap whole behind a
	// handle, and answers the built-in ReadResult; nil cuts such a result
	// and answers ReadResult unknown_handle.
	Results *Results
}

// Outcome is what became of a Call.
type Outcome struct {
	// Envelope is checked: a failure has an error, data is valid JSON and
	// no larger than the policy's max_tool_result_bytes unless marked
	// truncated.
	Envelope  toolexec.Envelope
	LatencyMS int64
	// Kept reports a result kept whole, or a read of one, for the audit
	// (Fact.Kept); nil when neither happened.
	Kept *Kept
}

// Timeout is the bound of one call of tool under policy: the tool's own
// timeout_ms when set, else the policy's timeout_per_tool_ms.
func Timeout(tool *manifest.Tool, policy manifest.Policy) time.Duration {
	if ms := tool.Execution.TimeoutMS; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return time.Duration(policy.TimeoutPerToolMS) * time.Millisecond
}

// Run executes c through r. now is the clock latency is measured with;
// onPanic, when set, hears of a Runner panic (the call fails, the
// process does not).
func Run(ctx context.Context, r toolexec.Runner, c Call, now func() time.Time, onPanic func(any)) Outcome {
	ctx, span := tracing.Start(ctx, "tool "+c.Tool.Name, trace.SpanKindInternal, attribute.String("claw.agent", c.Agent.ID),
		attribute.String("claw.tool", c.Tool.Name), attribute.String("claw.service", c.Tool.Execution.Service), attribute.String("claw.mode", c.Mode))
	defer span.End()
	if tracing.Arguments() {
		span.SetAttributes(attribute.String("claw.tool.arguments", string(c.Arguments)))
	}
	out := run(ctx, r, c, now, onPanic)
	span.SetAttributes(attribute.String("claw.outcome", Status(out.Envelope)))
	if !out.Envelope.OK {
		span.SetStatus(codes.Error, out.Envelope.Error.Code)
	}
	return out
}

func run(ctx context.Context, r toolexec.Runner, c Call, now func() time.Time, onPanic func(any)) Outcome {
	c.Policy = c.Policy.WithDefaults()
	if c.Tool == ReadResult {
		start := now()
		out := readResult(ctx, c)
		out.LatencyMS = now().Sub(start).Milliseconds()
		return out
	}
	timeout := Timeout(c.Tool, c.Policy)
	limit := c.Policy.MaxToolResultBytes
	call := toolexec.Call{AgentID: c.Agent.ID, Tool: c.Tool, Arguments: c.Arguments, Timeout: timeout, MaxResultBytes: limit}
	if c.Results.keeps() {
		// The executor bounds the result by the store's absolute bound
		// instead of the cap: what is over the cap is kept here.
		call.MaxResultBytes = int(c.Results.Store.Limits().MaxResultBytes)
	}
	if sa := c.Agent.ServiceAuth[c.Tool.Execution.Service]; sa != nil {
		call.Auth = sa.Bearer()
	}
	start := now()
	env := invoke(ctx, r, call, timeout+Grace, onPanic)
	var kept *Kept
	if c.Results.keeps() && env.OK && len(env.Data) > limit {
		env, kept = keep(ctx, c, env, limit)
	}
	return Outcome{Envelope: Check(env, limit), LatencyMS: now().Sub(start).Milliseconds(), Kept: kept}
}

// invoke calls the Runner, bounded even when it ignores its context: on a
// goroutine of its own, unless the Runner says the call returns by its
// deadline (toolexec.Bounded), which saves the call two goroutine
// switches.
func invoke(ctx context.Context, r toolexec.Runner, call toolexec.Call, bound time.Duration, onPanic func(any)) toolexec.Envelope {
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if b, ok := r.(toolexec.Bounded); ok && b.Bounded(call) {
		return runRecovered(cctx, r, call, onPanic)
	}
	done := make(chan toolexec.Envelope, 1)
	go func() { done <- runRecovered(cctx, r, call, onPanic) }()
	select {
	case env := <-done:
		return env
	case <-cctx.Done():
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return toolexec.Fail(toolexec.CodeTimeout, fmt.Sprintf("service did not respond within %s", call.Timeout), toolexec.RPCTimeout)
		}
		return toolexec.Fail(toolexec.CodeCanceled, "the caller went away before the call finished", 0)
	}
}

// runRecovered is r.Run, with a panic turned into a failed call.
func runRecovered(ctx context.Context, r toolexec.Runner, call toolexec.Call, onPanic func(any)) (env toolexec.Envelope) {
	defer func() {
		if p := recover(); p != nil {
			if onPanic != nil {
				onPanic(p)
			}
			env = toolexec.Fail(toolexec.CodeToolError, "the tool could not be executed (internal error)", 0)
		}
	}()
	return r.Run(ctx, call)
}

// Check enforces the envelope contract whatever the Runner did: a
// failure has an error, data is valid JSON, and data over max (the
// default when max is 0) is cut by the executor's own rule
// (toolexec.Cut: the whole envelope within max, truncated and
// original_bytes set; spec 000 "Truncation MUST be explicit").
func Check(env toolexec.Envelope, max int) toolexec.Envelope {
	if max <= 0 {
		max = manifest.DefaultMaxToolResultBytes
	}
	if !env.OK && env.Error == nil {
		env.Error = &toolexec.Error{Code: toolexec.CodeToolError, Message: "the tool failed without a reason"}
	}
	if len(env.Data) > 0 && !json.Valid(env.Data) {
		env.Data = wire.Quote(string(env.Data))
	}
	if env.OK && !env.Truncated && len(env.Data) > max {
		env = toolexec.Cut(env.Data, max)
	}
	return env
}

// Status is the audit status of an envelope: "ok" or its error code.
func Status(env toolexec.Envelope) string {
	if env.OK {
		return "ok"
	}
	return env.Error.Code
}

// Encode is the envelope as the JSON a model or MCP client reads.
func Encode(env toolexec.Envelope) json.RawMessage {
	content, err := json.Marshal(env)
	if err != nil {
		content, _ = json.Marshal(toolexec.Fail(toolexec.CodeToolError, "result could not be encoded", 0))
	}
	return content
}

// Executed is args as the service receives them as far as an operator
// (and duplicate detection) cares, by the executor's own rule
// (toolexec.ExecutedArguments): other spellings of claw_id dropped and
// claw_id forced to the agent's id when given or declared by tool's
// schema, so calls differing only there are one call, and a trace shows
// the id the service really got.
func Executed(args json.RawMessage, agentID string, tool *manifest.Tool) json.RawMessage {
	return toolexec.ExecutedArguments(args, agentID, tool)
}
