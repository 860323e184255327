package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

func TestApprovalRulesSeeTheArguments(t *testing.T) {
	if err := CheckApproval(`args.quantity * args.price > 10000`); err != nil {
		t.Fatal(err)
	}
	// The grant conditions' environment has no args: `when:` cannot use it.
	if err := Check(`args.quantity > 1`); err == nil || !strings.Contains(err.Error(), "args") {
		t.Fatalf("when: with args: %v", err)
	}
	if err := CheckApproval(`args.quantity`); err == nil || !strings.Contains(err.Error(), "bool") {
		t.Fatalf("a non-bool approval rule: %v", err)
	}
	tool := &manifest.Tool{Name: "trading-api.execute_trade", Execution: manifest.Execution{Service: "trading-api"},
		Approve: []manifest.Approval{{When: `args.quantity * args.price > 10000 && agent.id == "tiverton"`, Source: "x-claw.tools[0].approve"}}}
	e := NewEvaluator()
	in := Input{Now: time.Now(), Agent: Agent{ID: "tiverton"}}
	for _, c := range []struct {
		args    string
		held    bool
		failing bool
	}{
		{`{"quantity": 10, "price": 100}`, false, false},
		{`{"quantity": 1000, "price": 100.5}`, true, false},
		{`{"quantity": 10}`, true, true},                 // price missing: fails closed
		{`{"quantity": "many", "price": 1}`, true, true}, // wrong type: fails closed
	} {
		a, held, err := e.NeedsApproval(tool, in, json.RawMessage(c.args))
		if held != c.held || (err != nil) != c.failing {
			t.Errorf("%s: held %v err %v", c.args, held, err)
		}
		if held && a.Source != "x-claw.tools[0].approve" {
			t.Errorf("%s: rule %+v", c.args, a)
		}
	}
	tool.Approve = []manifest.Approval{{Always: true, Source: "x-claw.tool-policy.approve-destructive"}}
	if _, held, err := e.NeedsApproval(tool, in, json.RawMessage(`{}`)); !held || err != nil {
		t.Fatalf("always: %v %v", held, err)
	}
	tool.Approve = nil
	if _, held, _ := e.NeedsApproval(tool, in, json.RawMessage(`{}`)); held {
		t.Fatal("a tool without approvals was held")
	}
}
