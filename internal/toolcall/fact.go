package toolcall

import (
	"bytes"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Fact is one governed call as the records know it, reported once by the
// mediated loop or the broker: the history trace entry and the audit
// event are both derived from it, so a mediated call and a native one are
// recorded by one rule.
type Fact struct {
	Agent string
	// RequestID, Format and Model are the exchange's (Model empty on /mcp).
	RequestID, Format, Model string
	// Mode is manifest.ModeMediated or ModeNative; Round the hidden round
	// (mediated).
	Mode  string
	Round int
	// Name is the name the caller used; Tool the compiled tool it named,
	// nil when it named none.
	Name string
	Tool *manifest.Tool
	// Arguments are the caller's own (a JSON object, or the text it sent
	// quoted).
	Arguments json.RawMessage
	// Executed, when set, is Arguments as executed, already computed by
	// the caller (Executed); Trace computes it otherwise.
	Executed json.RawMessage
	Envelope toolexec.Envelope
	// StartMS is when the call started from its round's start (mediated);
	// LatencyMS how long it ran.
	StartMS   *int64
	LatencyMS int64
	// DuplicateOfRound and DuplicateCount are set on a repeat that was not
	// run again.
	DuplicateOfRound, DuplicateCount int
	// Kept is the run's Outcome.Kept: a result kept whole, or read.
	Kept *Kept
	// Approval is the request of a call that was held, as it ended.
	Approval *approvals.Request
}

// Trace is the call's history entry: the canonical name and service of a
// compiled tool, the arguments as executed (and the caller's beside them
// when they differ: an operator reading another agent's claw_id must not
// conclude that agent's data was read), and the envelope as the caller
// read it.
func (f *Fact) Trace() history.ToolCall {
	tc := history.ToolCall{Name: f.Name, Arguments: f.Arguments, Result: Encode(f.Envelope), StartMS: f.StartMS, LatencyMS: f.LatencyMS,
		Mode: f.Mode, DuplicateOfRound: f.DuplicateOfRound, DuplicateCount: f.DuplicateCount}
	if a := f.Approval; a != nil {
		tc.Approval = &history.Approval{ID: a.ID, Decision: a.State, By: a.By}
	}
	if f.Tool != nil {
		tc.Name, tc.Service = f.Tool.Name, f.Tool.Execution.Service
		executed := f.Executed
		if executed == nil {
			executed = Executed(f.Arguments, f.Agent, f.Tool)
		}
		if !bytes.Equal(executed, f.Arguments) {
			tc.Arguments, tc.ModelArguments = executed, f.Arguments
		}
	}
	return tc
}

// Event is the call's audit tool_call event. A call that named no
// compiled tool has no service (and is tool "unknown" to metrics).
func (f *Fact) Event() audit.Event {
	e := audit.Event{ClawID: f.Agent, Type: audit.TypeToolCall, RequestID: f.RequestID, Format: f.Format, Model: f.Model,
		Mediated: f.Mode == manifest.ModeMediated, Tool: f.Name, Round: f.Round, Status: Status(f.Envelope),
		LatencyMS: audit.Ptr(f.LatencyMS), Mode: f.Mode}
	if a := f.Approval; a != nil {
		e.Approval = &audit.Approval{ID: a.ID, Decision: a.State, By: a.By}
	}
	if f.Tool != nil {
		e.Tool, e.Service = f.Tool.Name, f.Tool.Execution.Service
	}
	return e
}
