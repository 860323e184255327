package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	log.Reset()
	second, err := openApprovals(cfg, nil, recorder.New(audit.New(&log), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `"type":"approval_decided"`) || !strings.Contains(log.String(), `"decision":"lost"`) || !strings.Contains(log.String(), id) {
		t.Fatalf("audit at start: %s", log.String())
	}
	if r, err := second.Decide(context.Background(), id, approvals.Decision{State: approvals.Approved, By: "ops"}); err != approvals.ErrDecided || r.State != approvals.Lost {
		t.Fatalf("approving a call of the stopped process: %+v %v", r, err)
	}
}
