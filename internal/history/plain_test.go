package history

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzAppendPlain holds the plain entry encoder to encoding/json's, byte
// for byte, with bodies spliced or not.
func FuzzAppendPlain(f *testing.F) {
	big := `{"model":"m","messages":[{"role":"user","content":"` + string(bytes.Repeat([]byte("x"), 1200)) + `"}]}`
	f.Add("id1", int64(1764000000123456789), "alice", "desk", "openai", "fake/m", true, "ok", 200, int64(12), `{"a": 1}`, `{"b":[1, 2]}`, 1, 2, 0, "", 0, true)
	f.Add("id2", int64(0), "bob", "", "mcp", "", false, "error", 0, int64(0), big, "", 0, 0, 3, "bad \"x\"", 2, false)
	f.Add("é", int64(-1), "a", "p", "f", "m", false, "ok", 0, int64(0), "null", "\"s\"", 0, 0, 0, "<&>", 0, true)
	f.Fuzz(func(t *testing.T, id string, ns int64, agent, pod, format, model string, stream bool, status string, code int, lat int64,
		req, resp string, in, out, rounds int, errMsg string, replaced int, valid bool) {
		e := Entry{ID: id, Timestamp: time.Unix(0, ns).UTC(), AgentID: agent, Pod: pod, Format: format, Model: model, Stream: stream,
			Status: status, StatusCode: code, LatencyMS: lat, Usage: Usage{in, out, rounds}, Error: errMsg, UTF8Replaced: replaced}
		if req != "" {
			e.Request = json.RawMessage(req)
		}
		if resp != "" {
			e.Response = json.RawMessage(resp)
		}
		if !json.Valid([]byte(req)) || (resp != "" && !json.Valid([]byte(resp))) {
			valid = false
		}
		e.BodiesValid = valid
		sr, sp := spliceable(e.Request, valid), spliceable(e.Response, valid)
		// A line from the pool, holding an earlier entry's bytes: none
		// of them may show.
		l := linePool.Get().(*line)
		l.buf = append(l.buf[:0], `{"stale":"line"}`...)
		defer l.release()
		if !appendPlain(l, &e, sr, sp) {
			return
		}
		got := l.parts
		want, err := reflectParts(e, sr, sp)
		if err != nil {
			t.Fatalf("appendPlain encoded an entry encoding/json refuses: %v", err)
		}
		if g, w := bytes.Join(got, nil), bytes.Join(want, nil); !bytes.Equal(g, w) {
			t.Fatalf("appendPlain:\n%s\nencoding/json:\n%s", g, w)
		}
	})
}

func BenchmarkEncodeEntry(b *testing.B) {
	e := Entry{ID: "req_0123456789abcdef", Timestamp: time.Now().UTC(), AgentID: "alice", Pod: "desk", Format: "openai", Model: "fake/gpt-4o",
		Status: StatusOK, StatusCode: 200, LatencyMS: 12, Usage: Usage{PromptTokens: 250, CompletionTokens: 20}, BodiesValid: true,
		Request:  json.RawMessage(`{"model":"fake/gpt-4o","messages":[{"role":"user","content":"hello there"}]}`),
		Response: json.RawMessage(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			l, _ := encodeParts(e)
			l.release()
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			_, _ = reflectParts(e, false, false)
		}
	})
}
