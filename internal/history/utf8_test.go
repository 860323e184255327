package history

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"
)

// A history line is valid UTF-8 whatever the exchange held, and an entry
// whose bytes had to be replaced says so.
func TestAppendReplacesInvalidUTF8(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	req := json.RawMessage("{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9 \xff\xfe ok \xc3\xa9\"}]}")
	args := json.RawMessage("{\"q\":\"\xc3\"}")
	trace := []Round{{Round: 1, ToolCalls: []ToolCall{{Name: "svc.t", Arguments: args, Result: json.RawMessage(`{"ok":true}`)}}}}
	e := Entry{ID: "r1", AgentID: "alice", Request: req, Response: json.RawMessage(`{"text":"fine é"}`), Error: "bad \x80", ToolTrace: trace}
	if err := w.Append(e); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(Entry{ID: "r2", AgentID: "alice", Request: json.RawMessage(`{"content":"all valid é"}`)}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(Path(dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(raw) {
		t.Fatalf("history file is not valid UTF-8: %q", raw)
	}
	entries, st, err := ReadFile(Path(dir, "alice"))
	if err != nil || len(entries) != 2 || st.Malformed != 0 {
		t.Fatalf("read %d entries, %d malformed, err %v", len(entries), st.Malformed, err)
	}
	if got := entries[0].UTF8Replaced; got != 5 { // \xe9, \xff, \xfe, \xc3, \x80
		t.Errorf("utf8_replaced = %d, want 5", got)
	}
	if entries[1].UTF8Replaced != 0 || bytes.Contains(raw[bytes.IndexByte(raw, '\n'):], []byte("utf8_replaced")) {
		t.Error("a valid entry is marked as replaced")
	}
	var content struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	if err := json.Unmarshal(entries[0].Request, &content); err != nil || content.Messages[0].Content != "caf\uFFFD \uFFFD\uFFFD ok é" {
		t.Errorf("request read back as %q (%v)", content.Messages, err)
	}
	// The caller's bytes are not changed behind its back.
	if !bytes.Equal(req, e.Request) || string(trace[0].ToolCalls[0].Arguments) != "{\"q\":\"\xc3\"}" {
		t.Error("Append changed the caller's entry")
	}
}

// FuzzEncodeLine: whatever bytes an exchange holds inside its JSON strings
// and text fields, the line is one line of valid UTF-8 and valid JSON that
// reads back, and counts exactly the bytes it replaced.
func FuzzEncodeLine(f *testing.F) {
	f.Add([]byte("plain"), "model")
	f.Add([]byte("caf\xe9\xff"), "m\x80")
	f.Add([]byte("\xed\xa0\x80 surrogate, \xf4\x90\x80\x80 too big"), "")
	f.Fuzz(func(t *testing.T, content []byte, model string) {
		// Build raw JSON that keeps content's bytes as they are inside a
		// string, escaping only what JSON syntax requires.
		raw := []byte(`{"content":"`)
		for _, c := range content {
			switch {
			case c == '"' || c == '\\':
				raw = append(raw, '\\', c)
			case c < 0x20:
				raw = append(raw, ' ')
			default:
				raw = append(raw, c)
			}
		}
		raw = append(raw, `"}`...)
		want := invalidBytes(content) + invalidBytes([]byte(model))
		line, err := encodeLine(Entry{ID: "x", AgentID: "alice", Model: model, Request: raw})
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(line) || bytes.IndexByte(line, '\n') != len(line)-1 {
			t.Fatalf("line is not one line of valid UTF-8: %q", line)
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line does not decode: %v", err)
		}
		if e.UTF8Replaced != want {
			t.Fatalf("utf8_replaced = %d, want %d", e.UTF8Replaced, want)
		}
	})
}

func invalidBytes(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			n++
		}
		i += size
	}
	return n
}
