package history

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// A line reaches its file in one system call, however many parts it is
// made of: two writers appending to one file (each with its own
// descriptor, as two processes would) never get a line of the other's
// between the parts of theirs. (Replicas each write a file of their own;
// this is how the single write is seen from outside.)
func TestTwoWritersNeverSplitALine(t *testing.T) {
	dir := t.TempDir()
	const writers, each = 2, 300
	var wg sync.WaitGroup
	for i := range writers {
		w, err := NewWriterWith(dir, WriterOptions{Sync: SyncNever})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bodies above spliceMin are parts of their own: several
			// parts per line.
			req := json.RawMessage(`{"messages":["` + strings.Repeat(string(rune('a'+i)), 48<<10) + `"]}`)
			resp := json.RawMessage(`{"choices":["` + strings.Repeat(string(rune('A'+i)), 8<<10) + `"]}`)
			for n := range each {
				if err := w.Append(Entry{ID: fmt.Sprintf("w%d-%d", i, n), AgentID: "alice", Request: req, Response: resp}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	entries, st, err := ReadFile(Path(dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Malformed != 0 || len(entries) != writers*each {
		t.Fatalf("%d whole lines and %d malformed, want %d whole", len(entries), st.Malformed, writers*each)
	}
}
