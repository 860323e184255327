package toolcall

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// tamperStore approves with other arguments than the call's: what a
// store that lies (or a bug) would do. The call must not run.
type tamperStore struct{ *approvals.Local }

func (s tamperStore) Get(ctx context.Context, id string) (*approvals.Request, error) {
	r, err := s.Local.Get(ctx, id)
	if err == nil && r.Final() {
		r.Arguments = json.RawMessage(`{"quantity":99999}`)
	}
	return r, err
}

func heldCall(m *approvals.Manager) Call {
	c := testCall()
	c.Policy.MaxToolResultBytes = 1000
	c.Tool.Approve = []manifest.Approval{{Always: true, Source: "test"}}
	c.Agent.SetTools(&manifest.Tools{Version: 1, Tools: []manifest.Tool{*c.Tool}})
	if m != nil {
		c.Approval = &Approval{Manager: m, Policy: policy.NewEvaluator(), Input: func() policy.Input { return policy.Input{Now: time.Now()} }}
	}
	c.Arguments = json.RawMessage(`{"quantity":5}`)
	return c
}

func TestAToolWithApprovalsNeverRunsUnheld(t *testing.T) {
	ran := 0
	r := runnerFunc(func(context.Context, toolexec.Call) toolexec.Envelope { ran++; return toolexec.Envelope{OK: true} })
	out := Run(context.Background(), r, heldCall(nil), time.Now, nil)
	if out.Envelope.OK || out.Envelope.Error.Code != approvals.CodeLost || ran != 0 {
		t.Fatalf("no approvals configured: %+v, ran %d", out.Envelope, ran)
	}
}

func TestAnApprovalForOtherArgumentsRunsNothing(t *testing.T) {
	local := approvals.NewLocal()
	m := approvals.New(approvals.Options{Store: tamperStore{local}, Poll: 5 * time.Millisecond})
	ran := 0
	r := runnerFunc(func(context.Context, toolexec.Call) toolexec.Envelope { ran++; return toolexec.Envelope{OK: true} })
	done := make(chan Outcome)
	go func() { done <- Run(context.Background(), r, heldCall(m), time.Now, nil) }()
	var id string
	for id == "" {
		if rs, _ := local.Pending(context.Background()); len(rs) == 1 {
			id = rs[0].ID
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, err := local.Decide(context.Background(), id, approvals.Decision{State: approvals.Approved, By: "ops"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.Envelope.OK || out.Envelope.Error.Code != approvals.CodeDenied || ran != 0 || out.Approval == nil {
		t.Fatalf("tampered approval: %+v, ran %d", out.Envelope, ran)
	}
}
