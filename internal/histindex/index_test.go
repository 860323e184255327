package histindex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
)

func entry(agent, id string, at time.Time, _ string) history.Entry {
	e := history.Entry{ID: id, AgentID: agent, Timestamp: at, Format: "openai", Model: "fake/m", Status: "ok", StatusCode: 200,
		LatencyMS: 12, Request: json.RawMessage(`{"messages":[{"role":"user","content":"hi"}]}`),
		Response: json.RawMessage(`{"choices":[{"message":{"content":"<script>alert(1)</script>"}}]}`),
		Usage:    history.Usage{PromptTokens: 3, CompletionTokens: 4, TotalRounds: 1},
		ToolTrace: []history.Round{{Round: 1, ToolCalls: []history.ToolCall{
			{Name: "desk.quote", Arguments: json.RawMessage(`{"s":"X"}`), Result: json.RawMessage(`{"ok":true,"data":1}`), LatencyMS: 5, Service: "desk"},
			{Name: "desk.trade", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{"ok":false,"error":{"code":"upstream_error","message":"boom"}}`), LatencyMS: 9, Service: "desk"},
		}}},
	}
	return e
}

func writeLine(t *testing.T, dir, agent string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, agent, history.FileName)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// withCost is an entry line with the cost members spend accounting adds.
type withCost struct {
	history.Entry
	CostUSD     json.Number `json:"cost_usd,omitempty"`
	CostUnknown bool        `json:"cost_unknown,omitempty"`
}

func openT(t *testing.T, hist, db string) *Index {
	t.Helper()
	x, err := Open(Options{HistoryDir: hist, Path: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func TestSyncQueryAndRestart(t *testing.T) {
	ctx := context.Background()
	hist, db := t.TempDir(), filepath.Join(t.TempDir(), "idx", "index.db")
	now := time.Now().UTC().Truncate(time.Millisecond)
	writeLine(t, hist, "alice", withCost{Entry: entry("alice", "h1", now.Add(-2*time.Minute), ""), CostUSD: "0.0125"})
	writeLine(t, hist, "alice", withCost{Entry: entry("alice", "h2", now.Add(-time.Minute), ""), CostUnknown: true})
	writeLine(t, hist, "bob", withCost{Entry: entry("bob", "h3", now, ""), CostUSD: "1e-6"})
	x := openT(t, hist, db)
	st, err := x.Sync(ctx)
	if err != nil || st.Entries != 3 {
		t.Fatalf("sync: %+v %v", st, err)
	}
	agents, _ := x.Agents(ctx)
	if len(agents) != 2 || agents[0] != "alice" || agents[1] != "bob" {
		t.Fatalf("agents %v", agents)
	}
	spend, _ := x.SpendSince(ctx, now.Add(-time.Hour))
	if spend["alice"].Micros != 12500 || spend["alice"].Unknown != 1 || spend["bob"].Micros != 1 {
		t.Fatalf("spend %+v", spend)
	}
	recent, _ := x.Recent(ctx, "alice", 10)
	if len(recent) != 2 || recent[0].ID != "h2" || len(recent[0].Calls) != 2 || recent[0].Calls[1].Status != "upstream_error" || recent[0].Calls[1].Error != "boom" {
		t.Fatalf("recent %+v", recent)
	}
	e, turn, err := x.Entry(ctx, "h1")
	if err != nil || e.ID != "h1" || string(e.ToolTrace[0].ToolCalls[0].Arguments) != `{"s":"X"}` || *turn.CostMicros != 12500 {
		t.Fatalf("entry %+v %v", e, err)
	}
	if _, _, err := x.Entry(ctx, "nope"); err != ErrNotFound {
		t.Fatalf("missing entry: %v", err)
	}
	tools, _ := x.Tools(ctx, now.Add(-time.Hour))
	if len(tools) != 2 || tools[1].Tool != "desk.trade" || tools[1].Errors != 3 || tools[1].LastError != "boom" || tools[0].P95 != 5 {
		t.Fatalf("tools %+v", tools)
	}
	// Nothing new: nothing indexed twice.
	if st, _ := x.Sync(ctx); st.Entries != 0 {
		t.Fatalf("second sync %+v", st)
	}
	// A partial last line waits for its newline.
	p := filepath.Join(hist, "bob", history.FileName)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	b, _ := json.Marshal(entry("bob", "h4", now, ""))
	f.Write(b[:10])
	if st, _ := x.Sync(ctx); st.Entries != 0 || st.Malformed != 0 {
		t.Fatalf("partial line indexed: %+v", st)
	}
	f.Write(append(b[10:], '\n'))
	f.Close()
	if st, _ := x.Sync(ctx); st.Entries != 1 {
		t.Fatalf("completed line: %+v", st)
	}
	x.Close()
	// A restart keeps the index: nothing read again.
	y := openT(t, hist, db)
	if st, _ := y.Sync(ctx); st.Entries != 0 {
		t.Fatalf("after restart %+v", st)
	}
	if r, _ := y.Recent(ctx, "bob", 10); len(r) != 2 {
		t.Fatalf("bob after restart %+v", r)
	}
	// A file replaced by a shorter one is indexed again from its start.
	os.Remove(p)
	writeLine(t, hist, "bob", entry("bob", "h5", now, ""))
	st, _ = y.Sync(ctx)
	if st.Reset != 1 || st.Entries != 1 {
		t.Fatalf("replaced file: %+v", st)
	}
	if r, _ := y.Recent(ctx, "bob", 10); len(r) != 1 || r[0].ID != "h5" {
		t.Fatalf("bob after replace %+v", r)
	}
}

func TestRebuildFromFiles(t *testing.T) {
	ctx := context.Background()
	hist, db := t.TempDir(), filepath.Join(t.TempDir(), "index.db")
	writeLine(t, hist, "alice", entry("alice", "h1", time.Now(), ""))
	x := openT(t, hist, db)
	x.Sync(ctx)
	x.Close()
	// A damaged index is thrown away and rebuilt from the files.
	if err := os.WriteFile(db, []byte("not a database, not at all, not even close to one....................................................."), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(db + "-wal")
	y := openT(t, hist, db)
	if st, err := y.Sync(ctx); err != nil || st.Entries != 1 {
		t.Fatalf("rebuild: %+v %v", st, err)
	}
}

func TestMaxEntriesPrunesOldest(t *testing.T) {
	ctx := context.Background()
	hist, db := t.TempDir(), filepath.Join(t.TempDir(), "index.db")
	for i := range 10 {
		writeLine(t, hist, "alice", entry("alice", "h"+string(rune('a'+i)), time.Now().Add(time.Duration(i)*time.Second), ""))
	}
	x, err := Open(Options{HistoryDir: hist, Path: db, MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	st, err := x.Sync(ctx)
	if err != nil || st.Pruned != 6 {
		t.Fatalf("%+v %v", st, err)
	}
	r, _ := x.Recent(ctx, "alice", 100)
	if len(r) != 4 || r[0].ID != "hj" {
		t.Fatalf("%+v", r)
	}
}

func TestMicroUSD(t *testing.T) {
	for in, want := range map[string]int64{"0.0125": 12500, "1e-6": 1, "0.0000005": 1, "0.0000004": 0, "3": 3_000_000, "-0.0000015": -2} {
		if got, ok := microUSD(json.Number(in)); !ok || got != want {
			t.Errorf("%s: %d %v, want %d", in, got, ok, want)
		}
	}
	if _, ok := microUSD("1e400"); ok {
		t.Error("1e400 accepted")
	}
}

func FuzzMicroUSD(f *testing.F) {
	for _, s := range []string{"0.1", "1e-7", "-3", "1e18", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := microUSD(json.Number(s))
		b, ok2 := microUSD(json.Number(s))
		if a != b || ok != ok2 {
			t.Fatal("not deterministic")
		}
	})
}

// FuzzIndexLine indexes whatever a history line may hold: never a panic
// nor a failed insert, whatever its members' types and sizes.
func FuzzIndexLine(f *testing.F) {
	f.Add(`{"id":"h1","agent_id":"a","timestamp":"2026-01-01T00:00:00Z","status":"ok","cost_usd":0.5,"tool_trace":[{"round":1,"tool_calls":[{"name":"s.t","result":{"ok":false,"error":{"code":"x","message":"y"}}}]}]}`)
	f.Add(`{"id":"h2","agent_id":"a","cost_usd":1e999999}`)
	f.Add(`{"id":"h3","agent_id":"a","cost_usd":-0.0000005,"policy_filtered":[{},{}]}`)
	f.Add(`{"agent_id":"b"}`)
	x, err := Open(Options{HistoryDir: f.TempDir(), Path: filepath.Join(f.TempDir(), "index.db")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { x.Close() })
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, s string) {
		w, err := x.begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.rollback()
		ok, err := w.add("a", 1, 0, []byte(s))
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if err := w.flush(true); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		var e struct {
			ID      string `json:"id"`
			AgentID string `json:"agent_id"`
		}
		if ok && (json.Unmarshal([]byte(s), &e) != nil || e.AgentID != "a" || e.ID == "") {
			t.Fatalf("%q indexed", s)
		}
	})
}
