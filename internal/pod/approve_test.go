package pod

import (
	"errors"
	"strings"
	"testing"
)

// approve: on a grant entry is `always` or a CEL expression that also
// sees args, checked where it is written; tool-policy's
// approve-destructive is a boolean and approval-timeout a duration.
func TestApproveKeys(t *testing.T) {
	s := mustService(t, "cllama: p\ntools: [{service: a, allow: [t], approve: always}, {service: b, allow: all, approve: 'args.quantity * args.price > 10000'}]")
	if s.Tools[0].Approve != ApproveAlways || s.Tools[1].Approve != "args.quantity * args.price > 10000" {
		t.Fatalf("approve = %q, %q", s.Tools[0].Approve, s.Tools[1].Approve)
	}
	got := ToolApprovals(s.Tools, "a", "t", "claw-pod.yml: ")
	if len(got) != 1 || !got[0].Always || got[0].Source != "claw-pod.yml: x-claw.tools[0].approve" {
		t.Fatalf("ToolApprovals = %+v", got)
	}
	if got := ToolApprovals(s.Tools, "a", "other", ""); len(got) != 0 {
		t.Fatalf("a tool the entry does not grant: %+v", got)
	}
	c := mustPod(t, "tool-policy: {approve-destructive: true, approval-timeout: 90s}")
	if c.ToolPolicy.ApproveDestructive == nil || !*c.ToolPolicy.ApproveDestructive || c.ToolPolicy.ApprovalTimeoutMS == nil || *c.ToolPolicy.ApprovalTimeoutMS != 90000 {
		t.Fatalf("tool-policy = %+v", c.ToolPolicy)
	}
	for _, tc := range []struct{ src, key, want string }{
		{"cllama: p\ntools: [{service: a, allow: all, approve: 3}]", "x-claw.tools[0].approve", "non-empty string"},
		{"cllama: p\ntools: [{service: a, allow: all, approve: 'argz.q > 1'}]", "x-claw.tools[0].approve", "undeclared reference to 'argz'"},
		{"cllama: p\ntools: [{service: a, allow: all, approve: 'args.q'}]", "x-claw.tools[0].approve", "must give a bool"},
		{"cllama: p\ntools: [{service: a, allow: all, aprove: always}]", "x-claw.tools[0].aprove", "unknown key"},
		{"cllama: p\ntool-policy: {approve-destructive: maybe}", "x-claw.tool-policy.approve-destructive", "boolean"},
		{"cllama: p\ntool-policy: {approval-timeout: 10}", "x-claw.tool-policy.approval-timeout", "duration string"},
		{"cllama: p\ntool-policy: {approval-timeout: soon}", "x-claw.tool-policy.approval-timeout", "not a duration"},
		{"cllama: p\ntool-policy: {approval-timeout: 48h}", "x-claw.tool-policy.approval-timeout", "out of range"},
	} {
		_, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, tc.src))
		var e *Error
		if !errors.As(err, &e) || e.Key != tc.key || !strings.Contains(e.Problem, tc.want) || e.Fix == "" {
			t.Errorf("%s: got %v, want key %s and %q", tc.src, err, tc.key, tc.want)
		}
	}
}
