package mediate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/wire"
	"golang.org/x/sync/errgroup"
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
//
// The managed prefix is answered in three steps: admit decides, in the
// model's order, what becomes of each call (calls past a cap, unknown
// names, malformed arguments and duplicates are answered without running;
// the others are runs); batches groups consecutive runs that may overlap;
// each batch runs, at most max_parallel_calls at once, and its calls are
// answered in the model's order, so results, audit events and the trace
// keep that order whatever order the calls finish in.
func (t *turn) playRound(ctx, parent context.Context, resp *wire.Response, p ownership) *failure {
	round := len(t.rounds) + 1
	start := t.m.opt.Now()
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
		calls := make([]pending, p.prefix)
		for i := range calls {
			keep = append(keep, i)
			calls[i] = t.admit(round, resp.Calls[i], p.tools[i], i, p.prefix)
		}
		for _, batch := range batches(calls) {
			t.runBatch(ctx, batch, start)
			if fail := t.holdKept(batch); fail != nil {
				return fail
			}
			for i := range batch {
				tc, res := t.answer(round, &batch[i])
				trace = append(trace, tc)
				results = append(results, res)
			}
			if ctx.Err() != nil {
				record()
				return t.contextFailure(ctx, parent, "tool call interrupted")
			}
		}
	case rejected:
		msg := t.rejection(p)
		offset := t.m.opt.Now().Sub(start)
		for i, c := range resp.Calls {
			pc := pending{call: c, tool: p.tools[i], args: rawArguments(c.Arguments), env: toolexec.Fail(toolexec.CodeRejected, msg, 0), start: offset}
			tc, res := t.answer(round, &pc)
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

// pending is one managed call of a round on its way to an answer.
type pending struct {
	call wire.Call
	tool *manifest.Tool
	// args are the arguments the trace shows (as executed); model are the
	// model's own, set only when they differ (claw_id forced).
	args, model json.RawMessage
	// run is set when the call goes to the Runner, with runArgs as the
	// model wrote them (toolexec forces claw_id itself).
	run     bool
	runArgs json.RawMessage
	// env is the answer (admit's, or the run's outcome), latency how long
	// the run took and start when it started, from the round's start.
	env     toolexec.Envelope
	latency int64
	start   time.Duration
	// dupRound and dupCount are set on a duplicate (seenCall).
	dupRound, dupCount int
	// kept is what the run did with a kept result (store or read).
	kept *toolcall.Kept
}

// parallel reports whether p runs and may overlap other such runs.
func (p *pending) parallel() bool { return p.run && p.tool.Annotations.IsParallelSafe() }

// admit decides what becomes of call i of a response with n managed
// calls, in the model's order: past a cap, unknown names and malformed
// arguments fail closed without reaching a service; a repeat of an
// earlier call of this turn (this round's included) is answered
// duplicate_tool_call; anything else is marked to run, through the
// Runner with the agent's projected credential (internal/toolcall, as a
// native call does).
func (t *turn) admit(round int, c wire.Call, tool *manifest.Tool, i, n int) pending {
	p := pending{call: c, tool: tool, args: rawArguments(c.Arguments)}
	if env, over := t.overCap(i, n); over {
		p.env = env
		return p
	}
	t.managed++
	if tool == nil {
		if nt, ok := t.pres.c.nativeModeTool(c.Name); ok {
			p.tool = nt
			p.env = toolexec.Fail(toolexec.CodeWrongMode, fmt.Sprintf("not executed: %s is granted to this agent as a native tool; the runner calls it through its MCP client on cllama's /mcp endpoint, not through the model's tool calls", nt.Name), 0)
			return p
		}
		p.env = toolexec.Fail(toolexec.CodeUnknownTool, fmt.Sprintf("unknown tool %q: it is neither a managed tool of this agent nor one of the runner's tools", c.Name), 0)
		return p
	}
	if env, denied := t.policyDenied(tool); denied {
		p.env = env
		return p
	}
	args, err := wire.ObjectArguments(c.Arguments)
	if err != nil {
		p.env = toolexec.Fail(toolexec.CodeInvalidArguments, err.Error(), toolexec.RPCInvalidParams)
		return p
	}
	executed := toolcall.Executed(args, t.x.Agent.ID, tool)
	// The trace shows the arguments as executed, and the model's beside
	// them when they differ: an operator reading another agent's claw_id
	// on a call must not conclude that agent's data was read.
	p.args = args
	if !bytes.Equal(executed, args) {
		p.args, p.model = executed, args
	}
	key := tool.Name + "\x00" + string(executed)
	if s, ok := t.seen[key]; ok {
		s.count++
		p.env = toolexec.Fail(toolexec.CodeDuplicate, fmt.Sprintf("duplicate call: %s was already called with these arguments in round %d; it was not executed again, use that result", t.pres.name(tool.Name), s.round), 0)
		p.dupRound, p.dupCount = s.round, s.count
		return p
	}
	t.seen[key] = &seenCall{round: round}
	p.run, p.runArgs = true, args
	// Admitted: the rules of the calls after it see it called ("once"
	// rules hold for several calls in one response).
	t.called = append(t.called, tool.Name)
	return p
}

// batches splits a round's admitted calls, in order, into batches whose
// runs may overlap: consecutive parallel-safe runs share a batch, and a
// run that is not parallel-safe is a barrier, a batch of its own, so it
// starts after every call before it finished and no call after it starts
// before it finished. Calls answered without running join the batch open
// at their place.
func batches(calls []pending) [][]pending {
	var out [][]pending
	lo, runs, alone := 0, 0, false
	for i := range calls {
		if !calls[i].run {
			continue
		}
		parallel := calls[i].parallel()
		if runs > 0 && (alone || !parallel) {
			out = append(out, calls[lo:i])
			lo, runs = i, 0
		}
		runs++
		alone = !parallel
	}
	return append(out, calls[lo:])
}

// runBatch runs a batch's runs, at most max_parallel_calls at once (a
// batch holding a run that is not parallel-safe holds only that one), and
// returns when all have finished. Every run is bounded by its own timeout
// and by ctx: the turn's total budget, and the runner's connection, whose
// loss cancels everything in flight. A run whose turn ended before it
// could start is not started.
func (t *turn) runBatch(ctx context.Context, batch []pending, roundStart time.Time) {
	opened := t.m.opt.Now().Sub(roundStart)
	runs := 0
	for i := range batch {
		batch[i].start = opened
		if batch[i].run {
			runs++
		}
	}
	run := func(p *pending) {
		p.start = t.m.opt.Now().Sub(roundStart)
		if ctx.Err() != nil {
			p.env = toolexec.Fail(toolexec.CodeCanceled, "not executed: the turn ended (the caller went away or total_timeout_ms elapsed) before the call started", 0)
			return
		}
		out := toolcall.Run(ctx, t.m.opt.Runner, toolcall.Call{Agent: t.x.Agent, Tool: p.tool, Arguments: p.runArgs, Policy: t.policy, Mode: manifest.ModeMediated,
			Results: t.results()}, t.m.opt.Now,
			func(v any) { t.m.auditError(t.x, fmt.Sprintf("tool runner panic: %v", v)) })
		p.env, p.latency, p.kept = out.Envelope, out.LatencyMS, out.Kept
	}
	// One call at a time (one call, or no parallelism allowed) runs on the
	// turn's goroutine: a goroutine per call would only add switches.
	if runs <= 1 || t.policy.MaxParallelCalls <= 1 {
		for i := range batch {
			if batch[i].run {
				run(&batch[i])
			}
		}
		return
	}
	var g errgroup.Group
	g.SetLimit(t.policy.MaxParallelCalls)
	for i := range batch {
		if p := &batch[i]; p.run {
			g.Go(func() error { run(p); return nil })
		}
	}
	_ = g.Wait() // the runs report in p.env, never as an error
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
func (t *turn) rejection(p ownership) string {
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

// answer turns a call's envelope into its trace entry, its tool result
// and its audit event.
func (t *turn) answer(round int, p *pending) (history.ToolCall, wire.Result) {
	start := p.start.Milliseconds()
	// admit computed the arguments as executed (p.args), and kept the
	// model's own (p.model) only where they differ.
	args := p.model
	if args == nil {
		args = p.args
	}
	f := toolcall.Fact{Agent: t.x.Agent.ID, RequestID: t.x.ID, Format: string(t.x.Format), Model: t.x.Model, Mode: manifest.ModeMediated, Round: round,
		Name: p.call.Name, Tool: p.tool, Arguments: args, Executed: p.args, Envelope: p.env, StartMS: &start, LatencyMS: p.latency,
		DuplicateOfRound: p.dupRound, DuplicateCount: p.dupCount, Kept: p.kept}
	tc := f.Trace()
	if status := toolcall.Status(p.env); p.tool != nil || status == toolexec.CodeUnknownTool || status == toolexec.CodeTooManyCalls {
		t.m.rec.Emit(f.Event())
	}
	if e, ok := f.KeptEvent(); ok {
		t.m.rec.Emit(e)
	}
	return tc, wire.Result{CallID: p.call.ID, Content: tc.Result, IsError: !p.env.OK}
}

// rawArguments makes arguments safe to keep as JSON in the trace.
func rawArguments(raw json.RawMessage) json.RawMessage {
	if c, err := wire.ObjectArguments(raw); err == nil {
		return c
	}
	return wire.Quote(string(raw))
}
