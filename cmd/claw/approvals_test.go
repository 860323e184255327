package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/approvals"
)

// testAdmin speaks to an admin API the way adminclient does.
type testAdmin struct{ url string }

func (c testAdmin) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return fmt.Errorf("%d: %s", res.StatusCode, data)
	}
	return json.Unmarshal(data, out)
}

func runVerb(t *testing.T, cmd func(*Factory) *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	f := &Factory{IO: IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}}
	c := cmd(f)
	c.SetArgs(args)
	err := c.ExecuteContext(context.Background())
	return out.String() + errb.String(), err
}

func TestApprovalsFromTheCLI(t *testing.T) {
	m := approvals.New(approvals.Options{Poll: 5 * time.Millisecond})
	mux := http.NewServeMux()
	m.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	old := adminFor
	adminFor = func(context.Context, *Factory, *PodOptions) (adminAPI, error) { return testAdmin{srv.URL}, nil }
	defer func() { adminFor = old }()

	// The arguments come from a model: a terminal escape in them is shown
	// escaped.
	done := make(chan *approvals.Request, 2)
	go func() {
		done <- m.Hold(context.Background(), approvals.Held{Agent: "executor", Tool: "trading-api.execute_trade", Service: "trading-api",
			Arguments: json.RawMessage(`{"symbol":"NVDA\u001b[2J","quantity":60}`), Rule: "args.quantity >= 50", Timeout: time.Minute})
	}()
	var id string
	for id == "" {
		if rs, _ := m.Store().Pending(context.Background()); len(rs) == 1 {
			id = rs[0].ID
		}
		time.Sleep(2 * time.Millisecond)
	}
	list := NewCmdApprovals
	out, err := runVerb(t, list)
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "trading-api.execute_trade") || strings.Contains(out, "\x1b") {
		t.Fatalf("claw approvals: %v\n%q", err, out)
	}
	out, err = runVerb(t, list, "--json")
	var doc struct{ Approvals []approvals.Request }
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Approvals) != 1 || doc.Approvals[0].ID != id || strings.Contains(out, "\x1b") {
		t.Fatalf("claw approvals --json: %v\n%s", err, out)
	}
	deny := func(f *Factory) *cobra.Command { return NewCmdDecide(f, false) }
	approve := func(f *Factory) *cobra.Command { return NewCmdDecide(f, true) }
	if _, err := runVerb(t, deny, id); err == nil {
		t.Fatal("claw deny without --reason was accepted")
	}
	if _, err := runVerb(t, approve, "not-an-id"); err == nil {
		t.Fatal("claw approve of a malformed id was accepted")
	}
	if out, err := runVerb(t, approve, id, "--note", "checked", "--by", "ops-alice"); err != nil || !strings.Contains(out, "approved "+id) {
		t.Fatalf("claw approve: %v %s", err, out)
	}
	if r := <-done; r.State != approvals.Approved || r.By != "ops-alice" || r.Reason != "checked" {
		t.Fatalf("held call ended %+v", r)
	}
	// Single use: deciding again fails, naming the state.
	if out, err := runVerb(t, deny, id, "--reason", "late"); err == nil || !strings.Contains(err.Error()+out, "already approved") {
		t.Fatalf("second decision: %v %s", err, out)
	}
}
