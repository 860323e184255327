package auditlog

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// Where a record came from.
const (
	SourceLog     = "log"         // cllama's audit log only
	SourceHistory = "history"     // a session-history tool_trace only
	SourceBoth    = "log+history" // a log tool_call completed from the trace
)

// Record is one merged audit event: the event as cllama logged it (or as
// rebuilt from session history), plus, for tool calls known to history,
// what the model asked and what came back. Field names are stable; `claw
// audit --json` prints them.
type Record struct {
	audit.Event
	// Arguments and Result (the structured envelope the model saw) come
	// from the session-history trace.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ModelArguments are the model's own arguments, when cllama executed
	// others (claw_id forced to the caller).
	ModelArguments json.RawMessage `json:"model_arguments,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	// RoundTokensIn and RoundTokensOut are the tokens of the model call
	// that asked for this round's calls (tool_trace round_usage).
	RoundTokensIn  *int `json:"round_tokens_in,omitempty"`
	RoundTokensOut *int `json:"round_tokens_out,omitempty"`
	// StartMS is when the call started, in milliseconds from its round's
	// start (the trace's start_ms): with the latency it shows which calls
	// of a round overlapped.
	StartMS *int64 `json:"start_ms,omitempty"`
	// DuplicateOfRound is set on a repeated call that was answered with
	// a duplicate_tool_call error instead of being executed again.
	DuplicateOfRound int `json:"duplicate_of_round,omitempty"`
	// Effect is "read-only" or "side-effect" (the tool's readOnly
	// annotation, spec 000 "Tool annotations") for tool calls of tools
	// the agent's compiled tools.json declares; empty otherwise.
	Effect string `json:"effect,omitempty"`
	// Source is SourceLog, SourceHistory or SourceBoth.
	Source string `json:"source"`
}

// Effects of a tool call.
const (
	EffectReadOnly   = "read-only"
	EffectSideEffect = "side-effect"
)

// MarkEffects sets Effect on the tool calls whose tool readOnly knows
// (known false leaves Effect empty: an unknown or since-revoked tool).
func MarkEffects(rs []Record, readOnly func(agent, tool string) (ro, known bool)) {
	for i := range rs {
		r := &rs[i]
		if r.Type != audit.TypeToolCall {
			continue
		}
		if ro, known := readOnly(r.ClawID, r.Tool); known {
			r.Effect = EffectSideEffect
			if ro {
				r.Effect = EffectReadOnly
			}
		}
	}
}

// callKey identifies one managed call across the two records of it. cllama
// logs a tool_call event and writes a trace entry for each call of a
// mediated exchange, both carrying the agent, the exchange's request id
// (the history entry id), the round and the canonical tool name. One round
// can hold the same tool more than once (a duplicate call), so the n-th
// occurrence of that quadruple in the log pairs with the n-th in the trace:
// both are written in the order the model listed the calls.
type callKey struct {
	agent, request, tool string
	round, n             int
}

// HistoryCalls turns the tool_trace of e into tool_call records, in trace
// order. Their time is the exchange's start (history keeps no per-call
// time); status is "ok" or the result envelope's error code.
func HistoryCalls(e history.Entry) []Record {
	var out []Record
	for _, r := range e.ToolTrace {
		for _, c := range r.ToolCalls {
			rec := Record{
				Event: audit.Event{
					TS: e.Timestamp, ClawID: e.AgentID, Type: audit.TypeToolCall, RequestID: e.ID,
					Format: e.Format, Model: e.Model, Mediated: c.Mode != manifest.ModeNative, Tool: c.Name, Service: c.Service,
					Round: r.Round, Status: resultStatus(c.Result), LatencyMS: audit.Ptr(c.LatencyMS), Mode: c.Mode,
				},
				Arguments:        c.Arguments,
				ModelArguments:   c.ModelArguments,
				Result:           c.Result,
				RoundTokensIn:    audit.Ptr(r.RoundUsage.PromptTokens),
				RoundTokensOut:   audit.Ptr(r.RoundUsage.CompletionTokens),
				StartMS:          c.StartMS,
				DuplicateOfRound: c.DuplicateOfRound,
				Source:           SourceHistory,
			}
			if a := c.Approval; a != nil {
				rec.Approval = &audit.Approval{ID: a.ID, Decision: a.Decision, By: a.By}
			}
			if e.Format == history.FormatMCP {
				// A native call has no model round: no round tokens.
				rec.RoundTokensIn, rec.RoundTokensOut = nil, nil
			}
			out = append(out, rec)
		}
	}
	return out
}

// exchangeKey identifies an exchange: the history entry id is cllama's
// request id.
type exchangeKey struct{ agent, request string }

// exchangeSeen says which events of an exchange the log holds.
type exchangeSeen struct{ request, outcome bool }

// exchangeRecords stands in for the request and response (or error) events
// of a history entry that the log lacks: compose logs are lost when the
// cllama container is recreated, session history is not, and the
// per-agent table should still count the exchange and its tokens.
func exchangeRecords(h history.Entry, seen exchangeSeen) []Record {
	if h.Format == history.FormatMCP {
		return nil // a native call: no model exchange to stand in for
	}
	var out []Record
	base := audit.Event{TS: h.Timestamp, ClawID: h.AgentID, RequestID: h.ID, Format: h.Format, Model: h.Model,
		Stream: h.Stream, Mediated: len(h.ToolTrace) > 0}
	if !seen.request {
		e := base
		e.Type = audit.TypeRequest
		out = append(out, Record{Event: e, Source: SourceHistory})
	}
	if !seen.outcome {
		e := base
		e.TS = h.Timestamp.Add(time.Duration(h.LatencyMS) * time.Millisecond)
		e.Type, e.StatusCode = audit.TypeResponse, h.StatusCode
		if h.Status == history.StatusError {
			e.Type, e.Error = audit.TypeError, h.Error
		}
		e.LatencyMS = audit.Ptr(h.LatencyMS)
		e.TokensIn, e.TokensOut = audit.Ptr(h.Usage.PromptTokens), audit.Ptr(h.Usage.CompletionTokens)
		e.CostUSD, e.CostUnknown = h.CostUSD, h.CostUnknown
		out = append(out, Record{Event: e, Source: SourceHistory})
	}
	return out
}

// resultStatus reads a result envelope: "ok", the error code, or "error"
// when the envelope says not ok without a code.
func resultStatus(raw json.RawMessage) string {
	var env struct {
		OK    *bool `json:"ok"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) != nil || env.OK == nil {
		return ""
	}
	if *env.OK {
		return "ok"
	}
	if env.Error != nil && env.Error.Code != "" {
		return env.Error.Code
	}
	return "error"
}

// Merge combines cllama's log events with session history. Each history
// entry stands in for the request and response (or error) events the log
// lacks for its exchange (matched by agent and request id), and each call
// of its tool_trace becomes a tool_call record. A call present in both becomes one record (SourceBoth): the
// log's time, status and latency, completed with the trace's arguments,
// result and round usage. Calls only in history (cllama's log rotated away,
// or a call cllama did not log) are added; calls only in the log stay as
// they are. The result is ordered by time, stably (log order first, then
// trace order).
func Merge(events []audit.Event, entries []history.Entry) []Record {
	out := make([]Record, 0, len(events))
	index := map[callKey]int{}
	seen := map[callKey]int{}
	logged := map[exchangeKey]exchangeSeen{}
	for _, e := range events {
		rec := Record{Event: e, Source: SourceLog}
		if e.RequestID != "" {
			k := exchangeKey{e.ClawID, e.RequestID}
			s := logged[k]
			switch e.Type {
			case audit.TypeRequest:
				s.request = true
			case audit.TypeResponse, audit.TypeError:
				s.outcome = true
			}
			logged[k] = s
		}
		if e.Type == audit.TypeToolCall && e.RequestID != "" {
			k := callKey{agent: e.ClawID, request: e.RequestID, tool: e.Tool, round: e.Round}
			k.n = seen[k]
			seen[k]++
			index[k] = len(out)
		}
		out = append(out, rec)
	}
	seen = map[callKey]int{}
	for _, h := range entries {
		out = append(out, exchangeRecords(h, logged[exchangeKey{h.AgentID, h.ID}])...)
		for _, c := range HistoryCalls(h) {
			k := callKey{agent: c.ClawID, request: c.RequestID, tool: c.Tool, round: c.Round}
			k.n = seen[k]
			seen[k]++
			i, ok := index[k]
			if !ok {
				out = append(out, c)
				continue
			}
			r := &out[i]
			r.Arguments, r.ModelArguments, r.Result = c.Arguments, c.ModelArguments, c.Result
			r.RoundTokensIn, r.RoundTokensOut = c.RoundTokensIn, c.RoundTokensOut
			r.StartMS = c.StartMS
			r.DuplicateOfRound = c.DuplicateOfRound
			if r.Approval == nil {
				r.Approval = c.Approval
			}
			if r.Service == "" {
				r.Service = c.Service
			}
			if r.Status == "" {
				r.Status = c.Status
			}
			if r.Mode == "" {
				r.Mode = c.Mode
			}
			r.Source = SourceBoth
			delete(index, k) // a trace call pairs with one log event only
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TS.Before(out[j].TS) })
	return out
}

// CallMode is the mode of a tool call record: its own, or mediated for
// the records of a cllama that predates modes (every call was mediated).
func (r *Record) CallMode() string {
	if r.Mode == "" {
		return manifest.ModeMediated
	}
	return r.Mode
}

// IsToolError reports whether r is a tool call that did not succeed.
func (r *Record) IsToolError() bool {
	return r.Type == audit.TypeToolCall && r.Status != "ok" && r.Status != ""
}
