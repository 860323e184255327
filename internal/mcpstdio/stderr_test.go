package mcpstdio

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestLineLogger(t *testing.T) {
	var out bytes.Buffer
	l := newLineLogger(slog.New(slog.NewJSONHandler(&out, nil)))
	l.setPID(42)
	l.Write([]byte("first li"))
	l.Write([]byte("ne\r\nsecond\n\nthird"))
	l.Write([]byte(strings.Repeat("x", maxStderrLine+10)))
	l.Flush()

	var msgs []string
	dec := json.NewDecoder(&out)
	for dec.More() {
		var rec struct {
			Msg string
			PID int
		}
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		if rec.PID != 42 {
			t.Errorf("pid = %d", rec.PID)
		}
		msgs = append(msgs, strings.TrimPrefix(rec.Msg, "child stderr: "))
	}
	want := []string{"first line", "second", "", "third" + strings.Repeat("x", maxStderrLine-5), strings.Repeat("x", 15)}
	if len(msgs) != len(want) {
		t.Fatalf("got %d lines, want %d: %q", len(msgs), len(want), msgs)
	}
	for i := range want {
		if msgs[i] != want[i] {
			t.Errorf("line %d = %.40q..., want %.40q...", i, msgs[i], want[i])
		}
	}
}
