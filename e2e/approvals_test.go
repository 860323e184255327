package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/modelsim"
)

// The operator's decisions on the executor's held orders.
const (
	operator   = "e2e-operator"
	denyReason = "over the desk's 25000 USD per-order limit"
)

// heldOrder is one of the executor's orders the pod's approve: rule
// (args.quantity >= 50) holds, and what the operator decides of it.
type heldOrder struct {
	symbol   string
	quantity float64
	approve  bool
	// pending is the request as the admin API listed it while the call
	// waited; decided as the decision returned it.
	pending, decided approvals.Request
}

// heldOrders are the executor's turns 3 and 4 (examples/trading-desk).
func heldOrders() map[string]*heldOrder {
	return map[string]*heldOrder{
		"NVDA": {symbol: "NVDA", quantity: 100, approve: true},
		"MSFT": {symbol: "MSFT", quantity: 80},
	}
}

// admin calls cllama's admin API with the operator token and returns the
// status, decoding a 2xx body into out.
func (p *pod) admin(method, path string, body, out any) int {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.adminURL()+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.operatorToken())
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			p.t.Fatalf("%s %s: %v\n%s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// decideHeldOrders acts as the operator while the pod runs: it waits for
// each of the executor's held orders on the admin API, checks the request
// is bound to that call and that the service has not received it, and
// approves the NVDA one and denies the MSFT one (each decision once: a
// second one is refused).
func decideHeldOrders(t *testing.T, p *pod) map[string]*heldOrder {
	orders := heldOrders()
	deadline := time.Now().Add(3 * time.Minute)
	for left := len(orders); left > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the executor's held orders were not all seen within 3m (%d left); executor:\n%s\ncllama:\n%s", left, p.logs("executor"), p.logs("cllama"))
		}
		var list struct {
			Approvals []approvals.Request `json:"approvals"`
		}
		if code := p.admin(http.MethodGet, "/api/approvals", nil, &list); code != http.StatusOK {
			t.Fatalf("GET /api/approvals: %d", code)
		}
		for _, r := range list.Approvals {
			var args struct {
				Symbol string `json:"symbol"`
			}
			_ = json.Unmarshal(r.Arguments, &args)
			o := orders[args.Symbol]
			if r.Agent != "executor" || o == nil || o.pending.ID != "" {
				t.Errorf("unexpected pending approval: %+v", r)
				continue
			}
			o.pending = r
			checkHeldRequest(t, p, o)
			d := approvals.DecisionBody{Decision: "deny", Reason: denyReason, By: operator, ArgumentsSHA256: r.ArgumentsSHA256}
			if o.approve {
				d = approvals.DecisionBody{Decision: "approve", Reason: "within the limit", By: operator, ArgumentsSHA256: r.ArgumentsSHA256}
			}
			if code := p.admin(http.MethodPost, "/api/approvals/"+r.ID, d, &o.decided); code != http.StatusOK {
				t.Fatalf("%s %s: %d", d.Decision, r.ID, code)
			}
			if code := p.admin(http.MethodPost, "/api/approvals/"+r.ID, d, nil); code != http.StatusConflict {
				t.Errorf("a second decision on %s: %d, want 409", r.ID, code)
			}
			left--
		}
		time.Sleep(300 * time.Millisecond)
	}
	return orders
}

// checkHeldRequest: the pending request names the exact call, and the
// call has not reached the service.
func checkHeldRequest(t *testing.T, p *pod, o *heldOrder) {
	r := o.pending
	var args map[string]any
	if err := json.Unmarshal(r.Arguments, &args); err != nil {
		t.Fatalf("approval %s arguments: %v", r.ID, err)
	}
	want := map[string]any{"symbol": o.symbol, "side": "buy", "quantity": o.quantity}
	for k, v := range want {
		if args[k] != v {
			t.Errorf("approval %s: arguments %s, want %v", r.ID, r.Arguments, want)
			break
		}
	}
	if r.Tool != "trading-api.execute_trade" || r.Service != "trading-api" || r.State != approvals.Pending ||
		r.ArgumentsSHA256 != approvals.Digest(r.Arguments) || !strings.Contains(r.Rule, "args.quantity >= 50") ||
		!approvals.ValidID(r.ID) || !r.ExpiresAt.After(r.CreatedAt) {
		t.Errorf("approval request not bound to the call as promised: %+v", r)
	}
	var desk received
	p.getJSON("trading-api", 4000, "/api/v1/received", &desk)
	for _, rec := range desk.Received {
		if strings.Contains(string(rec.Body), o.symbol) {
			t.Errorf("the %s order reached trading-api while its approval was pending: %s", o.symbol, rec.Body)
		}
	}
}

// checkHeldOrders: the approved order ran with exactly the approved
// arguments, the denied one never reached the service and the model read
// the reason, and the audit log and history record who decided what.
func checkHeldOrders(t *testing.T, p *pod, orders map[string]*heldOrder, desk received, exec runnerSummary, seen []modelsim.Record, events []audit.Event) {
	nvda, msft := orders["NVDA"], orders["MSFT"]
	if nvda.decided.State != approvals.Approved || msft.decided.State != approvals.Denied || msft.decided.Reason != denyReason || nvda.decided.By != operator {
		t.Fatalf("decisions returned %+v and %+v", nvda.decided, msft.decided)
	}
	var orderBodies []map[string]any
	for _, r := range desk.Received {
		if r.Method == http.MethodPost && r.Path == "/api/v1/trades" {
			var b map[string]any
			_ = json.Unmarshal(r.Body, &b)
			orderBodies = append(orderBodies, b)
		}
		if strings.Contains(string(r.Body), "MSFT") {
			t.Errorf("the denied MSFT order reached trading-api: %s %s %s", r.Method, r.Path, r.Body)
		}
	}
	var approved map[string]any
	_ = json.Unmarshal(nvda.pending.Arguments, &approved)
	if len(orderBodies) != 2 || !reflect.DeepEqual(orderBodies[1], approved) {
		t.Errorf("orders received %v, want the AAPL one, then exactly the approved arguments %v", orderBodies, approved)
	}

	answers := map[string]string{}
	for _, turn := range exec.Turns {
		answers[turn.User] = turn.Answer
	}
	if a := answers["Buy 100 shares of NVDA."]; !strings.Contains(a, "Bought 100 NVDA") {
		t.Errorf("executor's answer to the approved order: %q", a)
	}
	// The script answers with the reason only when it reached the model.
	if a := answers["Buy 80 shares of MSFT."]; !strings.Contains(a, denyReason) {
		t.Errorf("executor's answer to the denied order does not carry the operator's reason: %q", a)
	}
	if !slices.ContainsFunc(seen, func(rec modelsim.Record) bool {
		return rec.Rule == "executor-held-denied-reason" && rec.Conversation != nil && slices.ContainsFunc(rec.ToolResults, func(r modelsim.ToolResult) bool {
			return strings.Contains(r.Content, "approval_denied") && strings.Contains(r.Content, denyReason) && strings.Contains(r.Content, msft.pending.ID)
		})
	}) {
		t.Error("no model request carried the approval_denied result with the operator's reason")
	}

	for _, o := range orders {
		requested := slices.ContainsFunc(events, func(e audit.Event) bool {
			return e.Type == audit.TypeApprovalRequested && e.ClawID == "executor" && e.Tool == "trading-api.execute_trade" &&
				e.Approval != nil && e.Approval.ID == o.pending.ID && e.Approval.ArgumentsSHA256 == o.pending.ArgumentsSHA256
		})
		decided := slices.ContainsFunc(events, func(e audit.Event) bool {
			return e.Type == audit.TypeApprovalDecided && e.ClawID == "executor" && e.Approval != nil && e.Approval.ID == o.pending.ID &&
				e.Approval.Decision == o.decided.State && e.Approval.By == operator && (o.approve || e.Approval.Reason == denyReason)
		})
		if !requested || !decided {
			t.Errorf("%s: audit approval_requested %v, approval_decided (%s by %s) %v", o.symbol, requested, o.decided.State, operator, decided)
		}
	}
	if !slices.ContainsFunc(events, func(e audit.Event) bool {
		return e.Type == audit.TypeToolCall && e.ClawID == "executor" && e.Status == approvals.CodeDenied && e.Approval != nil && e.Approval.ID == msft.pending.ID
	}) {
		t.Error("no tool_call event records the denied order as approval_denied")
	}

	entries, _, err := history.ReadAgent(filepath.Join(p.dir, ".claw-runtime", "history"), "executor")
	if err != nil {
		t.Fatal(err)
	}
	traced := map[string]history.ToolCall{}
	for _, e := range entries {
		for _, r := range e.ToolTrace {
			for _, c := range r.ToolCalls {
				if c.Approval != nil {
					traced[c.Approval.ID] = c
				}
			}
		}
	}
	if c, ok := traced[nvda.pending.ID]; !ok || c.Approval.Decision != approvals.Approved || c.Approval.By != operator || !strings.Contains(string(c.Result), `"ok":true`) {
		t.Errorf("history of the approved order: %+v", c)
	}
	if c, ok := traced[msft.pending.ID]; !ok || c.Approval.Decision != approvals.Denied || !strings.Contains(string(c.Result), approvals.CodeDenied) {
		t.Errorf("history of the denied order: %+v", c)
	}
}
