package manifest

import (
	"fmt"
	"strings"
	"time"
)

// DefaultApprovalTimeoutMS is how long a held call waits for a person's
// decision unless x-claw.tool-policy.approval-timeout says otherwise.
const DefaultApprovalTimeoutMS = 10 * 60 * 1000

// MaxApprovalTimeoutMS bounds approval-timeout (a day).
const MaxApprovalTimeoutMS = 24 * 60 * 60 * 1000

// Approval is one reason a call of a tool waits for a person's decision
// before it runs (pod keys `approve:` on a tools entry, and
// x-claw.tool-policy.approve-destructive): Always, or When, a CEL
// expression over the grant conditions' variables plus `args` (the call's
// arguments), holding for the call. Source says where it was declared and
// is what an approval request names as its rule.
type Approval struct {
	Always bool   `json:"always,omitempty"`
	When   string `json:"when,omitempty"`
	Source string `json:"source"`
}

// Rule is the approval as an operator reads it: "always" or the
// expression, and where it was written.
func (a Approval) Rule() string {
	if a.Always {
		return "always (" + a.Source + ")"
	}
	return a.When + " (" + a.Source + ")"
}

func (a Approval) validate() error {
	switch {
	case a.Always && a.When != "":
		return fmt.Errorf(": always and when are exclusive")
	case !a.Always && strings.TrimSpace(a.When) == "":
		return fmt.Errorf(": always or when is required")
	case a.Source == "":
		return fmt.Errorf(".source: required")
	}
	return nil
}

// ApprovalTimeout is p's approval_timeout_ms, or the default.
func (p Policy) ApprovalTimeout() time.Duration {
	if p.ApprovalTimeoutMS > 0 {
		return time.Duration(p.ApprovalTimeoutMS) * time.Millisecond
	}
	return DefaultApprovalTimeoutMS * time.Millisecond
}
