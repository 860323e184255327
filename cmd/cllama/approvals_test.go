package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/recorder"
)

// A cllama that starts on the state directory of one that stopped while
// calls waited records them lost, and they can no longer be approved.
func TestCllamaStartsWithThePendingCallsLost(t *testing.T) {
	cfg := proxy.Config{StateDir: t.TempDir()}
	var log bytes.Buffer
	first, err := openApprovals(cfg, nil, recorder.New(audit.New(&log), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go first.Hold(ctx, approvals.Held{Agent: "executor", Tool: "trading-api.execute_trade", Arguments: json.RawMessage(`{"quantity":60}`), Timeout: time.Minute})
	var id string
	for id == "" {
		if rs, _ := first.Store().Pending(context.Background()); len(rs) == 1 {
			id = rs[0].ID
		}
		time.Sleep(2 * time.Millisecond)
	}
	if m, _ := filepath.Glob(filepath.Join(cfg.StateDir, "approvals", "*.json")); len(m) != 1 {
		t.Fatalf("pending files %v", m)
	}
	// The second cllama's own audit log (the first one's Hold may still be
	// writing to its own).
	var log2 bytes.Buffer
	second, err := openApprovals(cfg, nil, recorder.New(audit.New(&log2), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log2.String(), `"type":"approval_decided"`) || !strings.Contains(log2.String(), `"decision":"lost"`) || !strings.Contains(log2.String(), id) {
		t.Fatalf("audit at start: %s", log2.String())
	}
	if r, err := second.Decide(context.Background(), id, approvals.Decision{State: approvals.Approved, By: "ops"}); err != approvals.ErrDecided || r.State != approvals.Lost {
		t.Fatalf("approving a call of the stopped process: %+v %v", r, err)
	}
}

// A real cllama: a native call held for approval is listed on the admin
// listener to the operator alone (no token, an agent's token and a wrong
// token are refused, and the agents' listener serves no approval route:
// an agent cannot decide its own call), and the operator's approval
// releases it.
func TestApprovalRoutesAreTheOperatorsAlone(t *testing.T) {
	p := startMCPPodWith(t, func(ctxDir, _, svcURL string) {
		tools := strings.Replace(nativeTools(svcURL), `"annotations":{"readOnly":true,"title":"Market context"},`,
			`"annotations":{"readOnly":true,"title":"Market context"},"approve":[{"always":true,"source":"test"}],`, 1)
		write(t, filepath.Join(ctxDir, "analyst", "tools.json"), tools)
	}, "CLLAMA_ADMIN_ADDR=127.0.0.1:0", "CLLAMA_ADMIN_TOKEN="+testOperatorToken)
	adminBase := adminURL(t, p)
	cs := p.connect(t, "analyst:s3cret", "")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "desk.get_context", Arguments: map[string]any{"symbol": "ACME"}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true}
		}
		done <- res
	}()
	get := func(base, path, token, body string) (int, []byte) {
		method := http.MethodGet
		if body != "" {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		return res.StatusCode, data
	}
	var list struct{ Approvals []approvals.Request }
	for deadline := time.Now().Add(10 * time.Second); len(list.Approvals) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		code, data := get(adminBase, "/api/approvals", testOperatorToken, "")
		if code != http.StatusOK || json.Unmarshal(data, &list) != nil {
			t.Fatalf("operator list: %d %s", code, data)
		}
	}
	if len(list.Approvals) != 1 || list.Approvals[0].Tool != "desk.get_context" || list.Approvals[0].Agent != "analyst" {
		t.Fatalf("approvals %+v", list.Approvals)
	}
	id := list.Approvals[0].ID
	approve := `{"decision":"approve","by":"ops"}`
	for _, c := range []struct{ name, token string }{{"no token", ""}, {"an agent's token", "analyst:s3cret"}, {"a wrong token", strings.Repeat("0", 64)}} {
		if code, _ := get(adminBase, "/api/approvals", c.token, ""); code != http.StatusUnauthorized {
			t.Errorf("%s lists approvals: %d", c.name, code)
		}
		if code, _ := get(adminBase, "/api/approvals/"+id, c.token, approve); code != http.StatusUnauthorized {
			t.Errorf("%s decides: %d", c.name, code)
		}
	}
	for _, token := range []string{"analyst:s3cret", testOperatorToken} {
		if code, _ := get(p.base, "/api/approvals/"+id, token, approve); code == http.StatusOK {
			t.Errorf("the agents' listener decided an approval with %q", token)
		}
	}
	select {
	case res := <-done:
		t.Fatalf("the call ended before a decision: %+v", res)
	default:
	}
	if code, data := get(adminBase, "/api/approvals/"+id, testOperatorToken, approve); code != http.StatusOK {
		t.Fatalf("operator approve: %d %s", code, data)
	}
	if res := <-done; res.IsError {
		t.Fatalf("approved call: %+v", res)
	}
	if a := p.audit.String(); !strings.Contains(a, `"type":"approval_requested"`) || !strings.Contains(a, `"decision":"approved","by":"ops"`) {
		t.Fatalf("audit: %s", a)
	}
}

// A held call is an approval_requested event on the pod's webhook, signed
// with the pod's secret, naming the request and how to decide it.
func TestAHeldCallIsAlertedToThePodsWebhook(t *testing.T) {
	const secret = "webhook-secret-for-the-test"
	got := make(chan map[string]any, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if r.Header.Get("X-Claw-Signature") != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
			t.Errorf("bad signature %q", r.Header.Get("X-Claw-Signature"))
		}
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		got <- ev
	}))
	defer hook.Close()
	p := startMCPPodWith(t, func(ctxDir, authDir, svcURL string) {
		tools := strings.Replace(nativeTools(svcURL), `"annotations":{"readOnly":true,"title":"Market context"},`,
			`"annotations":{"readOnly":true,"title":"Market context"},"approve":[{"when":"args.symbol == \"ACME\"","source":"test"}],`, 1)
		write(t, filepath.Join(ctxDir, "analyst", "tools.json"), tools)
		write(t, filepath.Join(authDir, "pod.json"), fmt.Sprintf(`{"version":1,"pod":"desk","alerts":{"webhook":%q,"secret":%q}}`, hook.URL, secret))
	})
	cs := p.connect(t, "analyst:s3cret", "")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "desk.get_context", Arguments: map[string]any{"symbol": "ACME"}})
	}()
	var ev map[string]any
	select {
	case ev = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no alert")
	}
	cancel()
	id, _ := ev["id"].(string)
	if ev["event"] != "approval_requested" || ev["pod"] != "desk" || !approvals.ValidID(id) || ev["tool"] != "desk.get_context" || ev["approve"] != "claw approve "+id ||
		strings.Contains(fmt.Sprint(ev), secret) {
		t.Fatalf("alert %v", ev)
	}
}
