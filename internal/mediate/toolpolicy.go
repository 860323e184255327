package mediate

import (
	"encoding/json"
	"slices"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Tool policy (internal/policy): a tool whose grant conditions do not
// hold is not presented to the model, and a call of it is answered
// policy_denied. The conditions are evaluated before every upstream call
// of a turn (a call of one hidden round can unlock a tool for the next:
// session-scoped escalation within one turn) and again for each call, in
// the model's order, against every call admitted before it. What they
// read of the past is only what cllama itself ran: the hidden rounds it
// restored and the calls of this turn, never a transcript the runner
// wrote (a forged tool call and result in the runner's messages counts
// for nothing).

// hasRules reports whether the agent's manifest carries conditions.
func (t *turn) hasRules() bool { return t.x.Agent.Tools != nil && len(t.x.Agent.Tools.Rules) > 0 }

// policyInput is what the conditions see now.
func (t *turn) policyInput() policy.Input {
	return toolcall.PolicyInput(t.m.opt.Now(), t.x.Agent, t.x.Feeds,
		policy.Session{Called: slices.Concat(t.sessionCalled, t.called), Rounds: int64(t.sessionRounds + len(t.rounds))})
}

// scanSession reads the hidden rounds restored into the conversation
// (what cllama ran in its earlier turns) for the managed calls made
// before this turn.
func (t *turn) scanSession(msgs []json.RawMessage) {
	for _, msg := range msgs {
		c, err := t.f.Canonical(msg)
		if err != nil || len(c.Calls) == 0 {
			continue
		}
		managed := false
		for _, name := range c.Calls {
			if tool, ok := t.pres.c.resolve(name); ok {
				t.sessionCalled = append(t.sessionCalled, tool.Name)
				managed = true
			}
		}
		if managed {
			t.sessionRounds++
		}
	}
}

// applyPolicy presents to the next upstream call only the managed tools
// whose conditions hold now, and remembers why the others were withheld
// for the records (a tool withheld in any round of the turn, even if a
// later round offered it).
func (t *turn) applyPolicy() {
	r := t.m.policy.For(t.x.Agent.Tools, t.policyInput())
	_, denied := r.Filter(t.pres.c.tools)
	if len(denied) == 0 && len(t.pres.withheld) == 0 {
		return
	}
	withheld := make(map[string]bool, len(denied))
	for _, d := range denied {
		withheld[d.Tool] = true
		if slices.ContainsFunc(t.filtered, func(f audit.Filtered) bool { return f.Tool == d.Tool }) {
			continue // the records list a tool withheld in any round once
		}
		f := audit.Filtered{Tool: d.Tool, Rules: d.Rules}
		if d.Err != nil {
			f.Error = d.Err.Error()
		}
		t.filtered = append(t.filtered, f)
	}
	t.pres.withhold(withheld)
	t.req.Tools = slices.Concat(t.req.Tools[:t.runnerTools:t.runnerTools], t.pres.defs, t.pres.extra())
}

// policyDenied checks tool's conditions again before a call of it runs.
func (t *turn) policyDenied(tool *manifest.Tool) (toolexec.Envelope, bool) {
	if !toolcall.Ruled(t.x.Agent, tool) {
		return toolexec.Envelope{}, false
	}
	if ok, d := t.m.policy.For(t.x.Agent.Tools, t.policyInput()).Allowed(tool); !ok {
		return toolcall.PolicyDenied(d), true
	}
	return toolexec.Envelope{}, false
}
