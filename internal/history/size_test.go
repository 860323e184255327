package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A history line is read back with a bound (MaxLineBytes); a request is
// kept as received. HTML-like text in it must not grow sixfold on the way
// to disk (encoding/json writes '<' as \u003c by default), or an exchange
// well within the proxy's body limit becomes a line the reader skips.
func TestLineKeepsRequestSize(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	html := strings.Repeat("<b>&</b>", 64<<10) // 512 KiB of markup
	req, _ := json.Marshal(map[string]string{"model": "p/m", "content": html})
	// json.Marshal escaped it already; write it as a runner would send it.
	req = []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(req)))
	if err := w.Append(Entry{AgentID: "alice", Request: req}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "alice", FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > int64(len(req))+4<<10 {
		t.Fatalf("line is %d bytes for a %d-byte request", fi.Size(), len(req))
	}
	entries, _, err := ReadFile(Path(dir, "alice"))
	if err != nil || len(entries) != 1 || !strings.Contains(string(entries[0].Request), html) {
		t.Fatalf("read back %d entries, err %v", len(entries), err)
	}
}
