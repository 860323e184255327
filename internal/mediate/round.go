package mediate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/wire"
)

// seenCall is a managed call already answered in this turn (duplicate
// detection, spec 002 "Within a single mediated turn…").
type seenCall struct {
	round int
	// count is how many repeats were answered so far; the trace's
	// duplicate_count of a repeat is its ordinal (1 for the first repeat).
	count int
}

// playRound answers one response's calls, appends the assistant turn and
// the results to the upstream request, and records the round.
func (t *turn) playRound(ctx, parent context.Context, resp *wire.Response, p plan) *failure {
	round := len(t.rounds) + 1
	var (
		keep    []int
		results []wire.Result
		trace   []history.ToolCall
	)
	record := func() {
		t.rounds = append(t.rounds, history.Round{Round: round, ToolCalls: trace, RoundUsage: history.Usage{PromptTokens: resp.Usage.Prompt(), CompletionTokens: resp.Usage.Output}})
	}
	switch p.kind {
	case managedPrefix:
		for i := 0; i < p.prefix; i++ {
			keep = append(keep, i)
			if env, over := t.overCap(i, p.prefix); over {
				tc, res := t.answer(round, resp.Calls[i], p.tools[i], rawArguments(resp.Calls[i].Arguments), env, 0)
				trace = append(trace, tc)
				results = append(results, res)
				continue
			}
			t.managed++
			tc, res := t.execute(ctx, round, resp.Calls[i], p.tools[i])
			trace = append(trace, tc)
			results = append(results, res)
			if ctx.Err() != nil {
				record()
				return t.contextFailure(ctx, parent, "tool call interrupted")
			}
		}
	case rejected:
		msg := t.rejection(p)
		for i, c := range resp.Calls {
			env := toolexec.Fail(toolexec.CodeRejected, msg, 0)
			tc, res := t.answer(round, c, p.tools[i], rawArguments(c.Arguments), env, 0)
			trace = append(trace, tc)
			results = append(results, res)
		}
	}
	record()
	assistant, err := t.f.AssistantTurn(resp, keep)
	if err != nil {
		return internalFailure("building the assistant turn: %v", err)
	}
	msgs, err := t.f.ResultTurn(results)
	if err != nil {
		return internalFailure("building tool results: %v", err)
	}
	added := append(assistant, msgs...)
	t.req.Messages = append(t.req.Messages, added...)
	t.hidden = append(t.hidden, added...)
	if round == 1 {
		t.f.RelaxToolChoice(t.req)
	}
	return nil
}

// overCap answers call i of a response with n managed calls when it is
// past max_tool_calls_per_round or max_tool_calls_per_turn: a model (or a
// prompt injected into it) cannot turn one response into thousands of
// service calls. Calls past a cap are answered, not dropped, because both
// formats require a result for every call of the assistant turn.
func (t *turn) overCap(i, n int) (toolexec.Envelope, bool) {
	switch {
	case i >= t.policy.MaxToolCallsPerRound:
		return toolexec.Fail(toolexec.CodeTooManyCalls, fmt.Sprintf("not executed: this response made %d managed tool calls and at most %d are run per response (max_tool_calls_per_round); make the calls that matter in a response of their own", n, t.policy.MaxToolCallsPerRound), 0), true
	case t.managed >= t.policy.MaxToolCallsPerTurn:
		return toolexec.Fail(toolexec.CodeTooManyCalls, fmt.Sprintf("not executed: this turn already ran %d managed tool calls, the most allowed per turn (max_tool_calls_per_turn); answer with the results you have", t.policy.MaxToolCallsPerTurn), 0), true
	}
	return toolexec.Envelope{}, false
}

// rejection is the structured instruction for a native-first or
// interleaved batch (spec 002 case 5).
func (t *turn) rejection(p plan) string {
	var managed []string
	for _, tool := range p.tools {
		if tool != nil {
			managed = append(managed, t.pres.name(tool.Name))
		}
	}
	sort.Strings(managed)
	return fmt.Sprintf("Not executed: this response called runner tools before managed service tools. "+
		"Call the managed service tools (%s) first, in a response of their own; call runner tools in a later response.",
		strings.Join(dedupe(managed), ", "))
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// execute runs one proxy-owned call: unknown names and malformed arguments
// fail closed without reaching a service; a repeat of an earlier call of
// this turn is answered duplicate_tool_call; anything else goes to the
// Runner with the agent's projected credential (internal/toolcall, as a
// native call does).
func (t *turn) execute(ctx context.Context, round int, c wire.Call, tool *manifest.Tool) (history.ToolCall, wire.Result) {
	if tool == nil {
		if nt, ok := t.pres.c.nativeModeTool(c.Name); ok {
			env := toolexec.Fail(toolexec.CodeWrongMode, fmt.Sprintf("not executed: %s is granted to this agent as a native tool; the runner calls it through its MCP client on cllama's /mcp endpoint, not through the model's tool calls", nt.Name), 0)
			return t.answer(round, c, nt, rawArguments(c.Arguments), env, 0)
		}
		env := toolexec.Fail(toolexec.CodeUnknownTool, fmt.Sprintf("unknown tool %q: it is neither a managed tool of this agent nor one of the runner's tools", c.Name), 0)
		return t.answer(round, c, nil, rawArguments(c.Arguments), env, 0)
	}
	args, err := wire.ObjectArguments(c.Arguments)
	if err != nil {
		env := toolexec.Fail(toolexec.CodeInvalidArguments, err.Error(), toolexec.RPCInvalidParams)
		return t.answer(round, c, tool, rawArguments(c.Arguments), env, 0)
	}
	executed := toolcall.Executed(args, t.x.Agent.ID)
	key := tool.Name + "\x00" + string(executed)
	// The trace shows the arguments as executed, and the model's beside
	// them when they differ: an operator reading another agent's claw_id
	// on a call must not conclude that agent's data was read.
	record := func(tc history.ToolCall) history.ToolCall {
		if !bytes.Equal(executed, args) {
			tc.Arguments, tc.ModelArguments = executed, args
		}
		return tc
	}
	if s, ok := t.seen[key]; ok {
		s.count++
		env := toolexec.Fail(toolexec.CodeDuplicate, fmt.Sprintf("duplicate call: %s was already called with these arguments in round %d; it was not executed again, use that result", t.pres.name(tool.Name), s.round), 0)
		tc, res := t.answer(round, c, tool, args, env, 0)
		tc.DuplicateOfRound, tc.DuplicateCount = s.round, s.count
		return record(tc), res
	}
	t.seen[key] = &seenCall{round: round}
	out := toolcall.Run(ctx, t.m.opt.Runner, toolcall.Call{Agent: t.x.Agent, Tool: tool, Arguments: args, Policy: t.policy}, t.m.opt.Now,
		func(p any) { t.m.auditError(t.x, fmt.Sprintf("tool runner panic: %v", p)) })
	tc, res := t.answer(round, c, tool, args, out.Envelope, out.LatencyMS)
	return record(tc), res
}

// answer turns an envelope into the call's trace entry, its tool result
// and its audit event.
func (t *turn) answer(round int, c wire.Call, tool *manifest.Tool, args json.RawMessage, env toolexec.Envelope, latency int64) (history.ToolCall, wire.Result) {
	content := toolcall.Encode(env)
	tc := history.ToolCall{Name: c.Name, Arguments: args, Result: content, LatencyMS: latency, Mode: manifest.ModeMediated}
	if tool != nil {
		tc.Name, tc.Service = tool.Name, tool.Execution.Service
	}
	status := toolcall.Status(env)
	if tool != nil || status == toolexec.CodeUnknownTool || status == toolexec.CodeTooManyCalls {
		t.m.opt.Audit.Emit(audit.Event{ClawID: t.x.Agent.ID, Type: audit.TypeToolCall, RequestID: t.x.ID, Format: string(t.x.Format),
			Model: t.x.Model, Mediated: true, Tool: tc.Name, Service: tc.Service, Round: round, Status: status, LatencyMS: audit.Ptr(latency), Mode: manifest.ModeMediated})
	}
	return tc, wire.Result{CallID: c.ID, Content: content, IsError: !env.OK}
}

// rawArguments makes arguments safe to keep as JSON in the trace.
func rawArguments(raw json.RawMessage) json.RawMessage {
	if c, err := wire.ObjectArguments(raw); err == nil {
		return c
	}
	return wire.Quote(string(raw))
}
