package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriterConcurrentWholeLinesAndModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hist")
	w, err := NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const n = 100
	big := strings.Repeat("x", 16<<10) // several pages: a torn write would show
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := Entry{AgentID: "alice", Format: "openai", Model: "p/m", StatusCode: 200,
				Request: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, big))}
			if i%2 == 0 {
				e.ID = fmt.Sprintf("req-%d", i)
			}
			if err := w.Append(e); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	entries, st, err := ReadFile(Path(dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n || st.Malformed != 0 {
		t.Fatalf("read %d entries, %d malformed; want %d, 0", len(entries), st.Malformed, n)
	}
	ids := map[string]bool{}
	for _, e := range entries {
		if e.ID == "" || ids[e.ID] || e.Status != StatusOK || e.Timestamp.IsZero() {
			t.Fatalf("bad entry %+v", e.ID)
		}
		ids[e.ID] = true
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "alice"): 0o700, Path(dir, "alice"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode %v, want %v", path, got, want)
		}
	}
}

func TestWriterRejectsBadAgent(t *testing.T) {
	w, err := NewWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "../x", "a/b", "."} {
		if err := w.Append(Entry{AgentID: id, Request: json.RawMessage(`{}`)}); err == nil {
			t.Errorf("agent %q accepted", id)
		}
	}
	var nilW *Writer
	if err := nilW.Append(Entry{AgentID: "a"}); err != nil {
		t.Fatal("nil writer must discard")
	}
}

func TestEntriesSkipsMalformed(t *testing.T) {
	good := func(id string) string {
		b, _ := json.Marshal(Entry{ID: id, AgentID: "a", Timestamp: time.Unix(1, 0).UTC(), Request: json.RawMessage(`{}`)})
		return string(b)
	}
	in := strings.Join([]string{good("1"), "not json", "", `{"id":"x"}`, good("2"), `{"id":"torn`}, "\n")
	var st Stats
	var ids []string
	for e, err := range Entries(strings.NewReader(in), &st) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "1,2" || st.Malformed != 3 || st.Lines != 5 || fmt.Sprint(st.MalformedAt) != "[2 4 6]" {
		t.Fatalf("ids %v stats %+v", ids, st)
	}
}

func TestReadFileMissing(t *testing.T) {
	es, _, err := ReadFile(filepath.Join(t.TempDir(), "nope.jsonl"))
	if err != nil || es != nil {
		t.Fatal(es, err)
	}
}

func TestLineList(t *testing.T) {
	for _, c := range []struct {
		at    []int
		total int
		want  string
	}{
		{[]int{7}, 1, "7"},
		{[]int{3, 17, 40}, 3, "3, 17 and 40"},
		{[]int{1, 2}, 12, "1, 2, ... (12 in all)"},
	} {
		if got := LineList(c.at, c.total); got != c.want {
			t.Errorf("LineList(%v, %d) = %q, want %q", c.at, c.total, got, c.want)
		}
	}
}

// A large body spliced into a line reads back exactly as encoding/json
// would have written it (compact input), or as it was sent (a body with
// spaces keeps them); a body on several lines, or not valid JSON, is
// encoded the safe way; every line is one valid JSON document.
func TestLargeBodiesSpliced(t *testing.T) {
	pad := strings.Repeat("é<&>\\u00e9 \\\"x\\\" ", 200)
	for name, body := range map[string]string{
		"compact":   `{"model":"m","messages":[{"role":"user","content":"` + pad + `"}]}`,
		"spaces":    `{ "model": "m", "messages": [ {"role": "user", "content": "` + pad + `"} ] }`,
		"multiline": "{\n  \"model\": \"m\",\n  \"content\": \"" + pad + "\"\n}",
	} {
		t.Run(name, func(t *testing.T) {
			e := Entry{ID: "r1", AgentID: "a", Request: json.RawMessage(body), Response: json.RawMessage(body)}
			line, err := encodeLine(e)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Count(line, []byte("\n")) != 1 || !json.Valid(line) {
				t.Fatalf("not one JSON line: %q", line[:80])
			}
			var back Entry
			if err := json.Unmarshal(line, &back); err != nil {
				t.Fatal(err)
			}
			var want, got1, got2 bytes.Buffer
			_ = json.Compact(&want, []byte(body))
			_ = json.Compact(&got1, back.Request)
			_ = json.Compact(&got2, back.Response)
			if got1.String() != want.String() || got2.String() != want.String() {
				t.Fatal("the body did not survive")
			}
			if name == "compact" || name == "spaces" {
				if string(back.Request) != body {
					t.Fatalf("a one-line body must be kept as sent")
				}
			}
		})
	}
	// Not JSON (a caller's mistake): encoding/json refuses it, as before.
	if _, err := encodeLine(Entry{ID: "r2", Request: json.RawMessage(`{"a":` + strings.Repeat("1", 2000))}); err == nil {
		t.Fatal("an invalid body was written")
	}
}

// encodeLine is the line encodeParts writes, joined.
func encodeLine(e Entry) ([]byte, error) {
	l, err := encodeParts(e)
	if err != nil {
		return nil, err
	}
	defer l.release()
	return bytes.Join(l.parts, nil), nil
}
