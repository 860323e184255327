//go:build unix

package history

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A Writer that opens a file another Writer has open (two processes
// sharing a file, which replica ids avoid) does not cut its last line,
// which may be that Writer's write in progress: it ends it with a newline
// after it, as before. Once the other is gone, a partial line is cut.
func TestSecondWriterDoesNotCut(t *testing.T) {
	dir := t.TempDir()
	first, _ := repairingWriter(t, dir)
	if err := first.Append(Entry{ID: "1", AgentID: "alice", Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	// The first Writer's next line, half written.
	path := Path(dir, "alice")
	inProgress := `{"id":"2","agent_id":"alice","request":{"messages":[`
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(inProgress)
	_ = f.Close()

	second, cuts := repairingWriter(t, dir)
	if err := second.Append(Entry{ID: "3", AgentID: "alice", Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := cuts(); len(got) != 0 {
		t.Fatalf("the second Writer cut the first's line: %+v", got)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), inProgress+"\n") {
		t.Fatalf("the line in progress was not kept and ended:\n%s", b)
	}

	// Both gone (as a crash takes them), a third cuts what is partial.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(inProgress)
	_ = f.Close()
	third, cuts := repairingWriter(t, dir)
	if err := third.Append(Entry{ID: "4", AgentID: "alice", Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := cuts(); len(got) != 1 || got[0].cut.Bytes != int64(len(inProgress)) {
		t.Fatalf("cuts %+v, want the partial line's %d bytes", got, len(inProgress))
	}
}
