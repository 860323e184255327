package histindex

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
)

// Exchanges counts each agent's exchanges and failures per slot in a
// half-open range, leaving native calls out.
func TestExchangesPerSlot(t *testing.T) {
	ctx := context.Background()
	hist := t.TempDir()
	base := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
	failed := entry("alice", "h2", at(15), "")
	failed.Status, failed.StatusCode = "error", 502
	native := entry("alice", "h4", at(16), "")
	native.Format = history.FormatMCP
	for _, e := range []history.Entry{entry("alice", "h0", at(-1), ""), entry("alice", "h1", at(11), ""), failed, native,
		entry("alice", "h3", at(21), ""), entry("bob", "h5", at(12), ""), entry("bob", "h6", at(60), "")} {
		writeLine(t, hist, e.AgentID, e)
	}
	x := openT(t, hist, filepath.Join(t.TempDir(), "index.db"))
	if _, err := x.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := x.Exchanges(ctx, at(0), at(60), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]SlotCount{
		"alice@10": {Agent: "alice", Start: at(10), Requests: 2, Errors: 1, Last: at(15)},
		"alice@20": {Agent: "alice", Start: at(20), Requests: 1, Last: at(21)},
		"bob@10":   {Agent: "bob", Start: at(10), Requests: 1, Last: at(12)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %d slots", got, len(want))
	}
	for _, c := range got {
		k := c.Agent + "@" + map[time.Time]string{at(10): "10", at(20): "20"}[c.Start]
		if w, ok := want[k]; !ok || c != w {
			t.Errorf("slot %+v, want %+v", c, w)
		}
	}
}
