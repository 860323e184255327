package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/approvals"
)

// The console's approvals page reads the queue cllama holds calls in, and
// its approve button releases the held call with its exact arguments; a
// deny ends it denied.
func TestConsoleDecidesTheHeldCalls(t *testing.T) {
	m := approvals.New(approvals.Options{Poll: 10 * time.Millisecond})
	q := consoleApprovals{m}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hold := func(qty int) <-chan *approvals.Request {
		out := make(chan *approvals.Request, 1)
		args, _ := json.Marshal(map[string]any{"symbol": "AAPL", "quantity": qty, "claw_id": "executor"})
		go func() {
			out <- m.Hold(ctx, approvals.Held{Agent: "executor", Tool: "trading-api.execute_trade", Service: "trading-api", Mode: "mediated",
				Arguments: args, Rule: "args.quantity >= 50", Timeout: time.Minute})
		}()
		return out
	}
	approved, denied := hold(100), hold(500)
	var pending []string
	for len(pending) < 2 && ctx.Err() == nil {
		ps, err := q.Pending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pending = pending[:0]
		for _, p := range ps {
			pending = append(pending, p.ID)
			if p.Agent != "executor" || p.Tool != "trading-api.execute_trade" || p.Expires.IsZero() {
				t.Fatalf("pending call as the console shows it: %+v", p)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	ps, _ := q.Pending(ctx)
	byQty := map[string]string{}
	for _, p := range ps {
		var a struct{ Quantity int }
		_ = json.Unmarshal(p.Arguments, &a)
		byQty[map[int]string{100: "approve", 500: "deny"}[a.Quantity]] = p.ID
	}
	if err := q.Decide(ctx, byQty["approve"], true, "console"); err != nil {
		t.Fatal(err)
	}
	if err := q.Decide(ctx, byQty["deny"], false, "console"); err != nil {
		t.Fatal(err)
	}
	if r := <-approved; r.State != approvals.Approved || r.By != "console" {
		t.Fatalf("approved call ended %+v", r)
	}
	if r := <-denied; r.State != approvals.Denied {
		t.Fatalf("denied call ended %+v", r)
	}
	if err := q.Decide(ctx, byQty["approve"], true, "console"); err == nil {
		t.Fatal("a decision was used twice")
	}
	if ps, _ := q.Pending(ctx); len(ps) != 0 {
		t.Fatalf("still pending: %+v", ps)
	}
}
