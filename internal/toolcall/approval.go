package toolcall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Approval is how Run holds a call of a tool with approvals (pod key
// `approve:`, tool-policy approve-destructive) for a person's decision,
// after the grant conditions admitted it and before anything runs.
type Approval struct {
	Manager *approvals.Manager
	Policy  *policy.Evaluator
	// Input is what the approval rules see besides args (called only for
	// a tool with approvals).
	Input func() policy.Input
	// Wait bounds the wait: the caller's connection, whose loss ends the
	// request approval_cancelled. Nil: Run's context.
	Wait context.Context
	// Pause, when set, is called as the wait starts and what it returns as
	// the wait ends: a mediated turn's total_timeout_ms does not run
	// while a person decides.
	Pause func() (resume func())
	// Progress, when set, hears how long the call waited so far (MCP
	// progress notifications).
	Progress func(waited, timeout time.Duration)
}

// hold decides whether c waits for a person and, when it does, waits.
// run reports whether c may run: not held, or approved with exactly
// these arguments; args are then the arguments to run (as executed, the
// approved ones). env answers a call that may not run.
func hold(ctx context.Context, c Call) (req *approvals.Request, args json.RawMessage, env toolexec.Envelope, run bool) {
	a := c.Approval
	executed := Executed(c.Arguments, c.Agent.ID, c.Tool)
	rule, held, err := a.Policy.NeedsApproval(c.Tool, a.Input(), executed)
	if !held {
		return nil, c.Arguments, env, true
	}
	ruleText := rule.Rule()
	if err != nil {
		ruleText += "; " + err.Error()
	}
	wait := a.Wait
	if wait == nil {
		wait = ctx
	}
	if a.Pause != nil {
		defer a.Pause()()
	}
	timeout := c.Policy.ApprovalTimeout()
	req = a.Manager.Hold(wait, approvals.Held{Agent: c.Agent.ID, Tool: c.Tool.Name, Service: c.Tool.Execution.Service, Mode: c.Mode,
		Arguments: executed, Rule: ruleText, ToolsSHA256: toolsDigest(c), Timeout: timeout, Progress: a.Progress})
	switch req.State {
	case approvals.Approved:
		// The decision is bound to these arguments: the request's digest
		// is this call's, and the arguments it holds are those digested.
		sum := approvals.Digest(executed)
		if req.ArgumentsSHA256 != sum || approvals.Digest(req.Arguments) != sum || req.Agent != c.Agent.ID || req.Tool != c.Tool.Name {
			return req, nil, toolexec.Fail(approvals.CodeDenied, fmt.Sprintf("not executed: approval %s does not match this call's arguments; nothing ran", req.ID), 0), false
		}
		return req, executed, env, true
	case approvals.Denied:
		return req, nil, toolexec.Fail(approvals.CodeDenied, fmt.Sprintf("not executed: a person denied this call (approval %s): %s", req.ID, req.Reason), 0), false
	case approvals.Timeout:
		return req, nil, toolexec.Fail(approvals.CodeTimeout, fmt.Sprintf("not executed: this call needs a person's approval and no one decided within %s (approval %s); do not retry it unasked", timeout, req.ID), 0), false
	case approvals.Cancelled:
		return req, nil, toolexec.Fail(approvals.CodeCancelled, fmt.Sprintf("not executed: the request ended before a person decided (approval %s)", req.ID), 0), false
	}
	return req, nil, toolexec.Fail(approvals.CodeLost, fmt.Sprintf("not executed: approval %s was lost (%s); nothing ran", req.ID, req.Reason), 0), false
}

// toolsDigest is the SHA-256 of the agent's compiled tools as loaded.
func toolsDigest(c Call) string {
	if c.Agent.Tools == nil {
		return ""
	}
	data, err := json.Marshal(c.Agent.Tools)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
