package mediate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Tool policy (internal/policy): a tool whose grant conditions do not
// hold is not presented for this request, and a call of it is answered
// policy_denied; the conditions are evaluated when the request is
// presented and again before each call runs.

// hasRules reports whether the agent's manifest carries conditions.
func (t *turn) hasRules() bool { return t.x.Agent.Tools != nil && len(t.x.Agent.Tools.Rules) > 0 }

// policyInput is what the conditions see now.
func (t *turn) policyInput() policy.Input {
	a := t.x.Agent
	in := policy.Input{
		Now:     t.m.opt.Now(),
		Agent:   policy.Agent{ID: a.ID, Service: a.Metadata.Service, Type: a.Metadata.Type},
		Session: policy.Session{Called: slices.Concat(t.sessionCalled, t.called), Rounds: int64(t.sessionRounds + len(t.rounds))},
	}
	if len(t.x.Feeds) > 0 {
		in.Feeds = make(map[string]any, len(t.x.Feeds))
		for name, body := range t.x.Feeds {
			in.Feeds[name] = policy.FeedValue([]byte(body))
		}
	}
	return in
}

// scanSession reads the conversation (the runner's messages with hidden
// rounds restored) for the managed calls made before this turn.
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

// applyPolicy withholds the tools whose conditions do not hold from this
// request's presentation, and remembers why for the records.
func (t *turn) applyPolicy() {
	if !t.hasRules() {
		return
	}
	t.scanSession(t.req.Messages)
	r := t.m.policy.For(t.x.Agent.Tools, t.policyInput())
	_, denied := r.Filter(t.pres.c.tools)
	if len(denied) == 0 {
		return
	}
	withheld := make(map[string]bool, len(denied))
	for _, d := range denied {
		withheld[d.Tool] = true
		f := audit.Filtered{Tool: d.Tool, Rules: d.Rules}
		if d.Err != nil {
			f.Error = d.Err.Error()
		}
		t.filtered = append(t.filtered, f)
	}
	t.pres.withhold(withheld)
}

// policyDenied checks tool's conditions again before a call of it runs.
func (t *turn) policyDenied(tool *manifest.Tool) (toolexec.Envelope, bool) {
	if !t.hasRules() || len(tool.When) == 0 {
		return toolexec.Envelope{}, false
	}
	ok, d := t.m.policy.For(t.x.Agent.Tools, t.policyInput()).Allowed(tool)
	if ok {
		return toolexec.Envelope{}, false
	}
	msg := fmt.Sprintf("not executed: %s is not available now; its grant conditions (%s) do not hold", tool.Name, strings.Join(d.Rules, ", "))
	if d.Err != nil {
		msg += fmt.Sprintf(" (%v)", d.Err)
	}
	return toolexec.Fail(toolexec.CodePolicyDenied, msg, 0), true
}
