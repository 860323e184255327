package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
)

// OpenRecorder is the one rule for opening session history: files named
// after this replica, a line a crash cut short cut off and reported as a
// file_repaired event through the recorder, the fsync setting checked.
func TestOpenRecorderHistory(t *testing.T) {
	dir := t.TempDir()
	torn := filepath.Join(dir, "alice", history.ReplicaFileName("r1"))
	writeFile(t, torn, `{"id":"req_1","agent_id":"alice"}`+"\n"+`{"id":"req_2","ag`)
	log := &syncBuffer{}
	rec, hw, err := OpenRecorder(Config{HistoryDir: dir, ReplicaID: "r1", HistoryFiles: 3}, audit.New(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	if hw.Files() != 3 {
		t.Fatalf("history spread over up to %d files, want 3 (CLLAMA_HISTORY_FILES)", hw.Files())
	}
	if err := rec.Append(history.Entry{ID: "req_3", AgentID: "alice", Format: "openai", Status: history.StatusOK}); err != nil {
		t.Fatal(err)
	}
	if err := hw.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(torn)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `"req_3"`) {
		t.Fatalf("history file %q", data)
	}
	e := log.waitEvent(t, audit.TypeFileRepaired)
	if e.ClawID != "alice" || e.File != torn || e.Offset == nil || *e.Offset != int64(len(`{"id":"req_1","agent_id":"alice"}`+"\n")) {
		t.Fatalf("repair event %+v", e)
	}

	// Without a replica id or shared state: history.jsonl.
	rec, hw, err = OpenRecorder(Config{HistoryDir: dir}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Append(history.Entry{ID: "req_4", AgentID: "bob", Format: "openai", Status: history.StatusOK}); err != nil {
		t.Fatal(err)
	}
	_ = hw.Close()
	if _, err := os.Stat(filepath.Join(dir, "bob", "history.jsonl")); err != nil {
		t.Fatal(err)
	}

	if _, _, err := OpenRecorder(Config{HistoryDir: dir, HistoryFsync: "sometimes"}, nil, nil); err == nil || !strings.Contains(err.Error(), "CLLAMA_HISTORY_FSYNC") {
		t.Fatalf("bad fsync setting: %v", err)
	}
	rec, hw, err = OpenRecorder(Config{}, nil, nil)
	if err != nil || hw != nil || rec.HistoryOn() {
		t.Fatalf("history off: %v %v %v", err, hw, rec.HistoryOn())
	}
}
