package history

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Replicas sharing a history directory write files of their own; an
// agent's history reads them all, merged by time.
func TestReplicasWriteApartAndReadTogether(t *testing.T) {
	dir := t.TempDir()
	a, err := NewWriterWith(dir, WriterOptions{Replica: "cllama-0", Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewWriterWith(dir, WriterOptions{Replica: "cllama-1", Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	for i, w := range []*Writer{a, b, a, b} {
		if err := w.Append(Entry{ID: string(rune('1' + i)), AgentID: "scout", Timestamp: t0.Add(time.Duration(i) * time.Second), Status: StatusOK}); err != nil {
			t.Fatal(err)
		}
	}
	_ = a.Close()
	_ = b.Close()
	for _, name := range []string{"history.cllama-0.jsonl", "history.cllama-1.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, "scout", name)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(Path(dir, "scout")); err == nil {
		t.Fatal("a replica wrote the shared history.jsonl")
	}
	es, paths, err := ReadAgent(dir, "scout")
	if err != nil || len(paths) != 2 || len(es) != 4 {
		t.Fatalf("read %d entries from %v: %v", len(es), paths, err)
	}
	for i, e := range es {
		if e.ID != string(rune('1'+i)) {
			t.Fatalf("order: %v", es)
		}
	}
	if _, err := NewWriterWith(dir, WriterOptions{Replica: "../x"}); err == nil {
		t.Fatal("a replica id that is a path was accepted")
	}
}
