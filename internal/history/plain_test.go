package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// FuzzAppendPlain holds the plain entry encoder to encoding/json's, byte
// for byte, with bodies spliced or not.
func FuzzAppendPlain(f *testing.F) {
	big := `{"model":"m","messages":[{"role":"user","content":"` + string(bytes.Repeat([]byte("x"), 1200)) + `"}]}`
	f.Add("id1", int64(1764000000123456789), "alice", "desk", "openai", "fake/m", true, "ok", 200, int64(12), `{"a": 1}`, `{"b":[1, 2]}`, 1, 2, 0, "", 0, true,
		0, "", "", "", "", "", int64(0), false, 0)
	f.Add("id2", int64(0), "bob", "", "mcp", "", false, "error", 0, int64(0), big, "", 0, 0, 3, "bad \"x\"", 2, false,
		1, "desk.ping", `{"q": "x"}`, `{"ok":true}`, "", "desk", int64(0), false, 0)
	f.Add("é", int64(-1), "a", "p", "f", "m", false, "ok", 0, int64(0), "null", "\"s\"", 0, 0, 0, "<&>", 0, true,
		2, "desk.trade", `{"claw_id":"a"}`, "", `{"claw_id":"b"}`, "desk", int64(7), true, 1)
	f.Add("id3", int64(5), "a", "", "openai", "m", false, "ok", 200, int64(1), `{}`, `{}`, 0, 0, 2, "", 0, true,
		1, "svc.t\u00e9", "{", "[1]", "", "svc", int64(-3), true, 2)
	f.Add("id4", int64(9), "alice", "desk", "openai", "fake/m", false, "ok", 200, int64(3), `{"m":1}`, `{"r":2}`, 4, 5, 2, "", 0, true,
		3, "desk.ping", `{"q": "x"}`, `{"ok":true}`, `{"claw_id":"b"}`, "desk", int64(7), true, 1)
	f.Fuzz(func(t *testing.T, id string, ns int64, agent, pod, format, model string, stream bool, status string, code int, lat int64,
		req, resp string, in, out, rounds int, errMsg string, replaced int, valid bool,
		traceRounds int, tool, args, result, modelArgs, service string, start int64, hasStart bool, dup int) {
		e := Entry{ID: id, Timestamp: time.Unix(0, ns).UTC(), AgentID: agent, Pod: pod, Format: format, Model: model, Stream: stream,
			Status: status, StatusCode: code, LatencyMS: lat, Usage: Usage{in, out, rounds}, Error: errMsg, UTF8Replaced: replaced}
		// A tool trace of up to three rounds, each one call (the last
		// round none, or a nil list), built from the inputs.
		for r := range min(max(traceRounds, 0), 3) {
			c := ToolCall{Name: tool, Result: json.RawMessage(result), LatencyMS: int64(r) - 1, Service: service, DuplicateOfRound: dup * r, DuplicateCount: dup}
			if args != "" {
				c.Arguments = json.RawMessage(args)
			}
			if modelArgs != "" {
				c.ModelArguments = json.RawMessage(modelArgs)
			}
			if hasStart {
				c.StartMS = &start
			}
			if r == 1 {
				c.Mode = "mediated"
			}
			round := Round{Round: r + 1, ToolCalls: []ToolCall{c}, RoundUsage: Usage{in, out, r}}
			if r == 2 {
				round.ToolCalls = nil
			}
			e.ToolTrace = append(e.ToolTrace, round)
		}
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
		// A request the edge found plain (ASCII, one line) is not scanned
		// again: the line must come out the same.
		_, _, plain := jsontop.ValidWalk(e.Request, nil)
		e.RequestPlain = plain && valid
		sr, sp := spliceable(e.Request, valid, e.RequestPlain), spliceable(e.Response, valid, false)
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

// A mediated turn's entry, tool trace and all, takes the plain encoder.
func TestAppendPlainTakesToolTraces(t *testing.T) {
	start := int64(2)
	e := Entry{ID: "req_1", Timestamp: time.Unix(1764000000, 5).UTC(), AgentID: "alice", Format: "openai", Model: "fake/m",
		Status: StatusOK, StatusCode: 200, LatencyMS: 9, BodiesValid: true,
		Request: json.RawMessage(`{"model":"fake/m"}`), Response: json.RawMessage(`{"id":"x"}`),
		Usage: Usage{PromptTokens: 3, CompletionTokens: 4, TotalRounds: 2},
		ToolTrace: []Round{{Round: 1, RoundUsage: Usage{PromptTokens: 1, CompletionTokens: 2}, ToolCalls: []ToolCall{
			{Name: "desk.ping", Arguments: json.RawMessage(`{ "claw_id": "alice" }`), ModelArguments: json.RawMessage(`{}`),
				Result: json.RawMessage(`{"pong":true}`), StartMS: &start, LatencyMS: 4, Service: "desk", Mode: "mediated"},
			{Name: "desk.ping", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`{"pong":true}`), Service: "desk",
				DuplicateOfRound: 1, DuplicateCount: 2},
		}}}}
	l := linePool.Get().(*line)
	defer l.release()
	if !appendPlain(l, &e, true, true) {
		t.Fatal("a tool trace of plain strings went to encoding/json")
	}
	want, err := reflectParts(e, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := bytes.Join(l.parts, nil), bytes.Join(want, nil); !bytes.Equal(g, w) {
		t.Fatalf("appendPlain:\n%s\nencoding/json:\n%s", g, w)
	}
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
	// A 200 KB request, as the proxy hands it over (valid, and plain as
	// the edge found it) and without the edge's word on it (scanned for
	// invalid UTF-8 and line breaks here).
	big := e
	big.Request = json.RawMessage(`{"model":"fake/gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor ", 200<<10/18) + `"}]}`)
	for _, plain := range []bool{true, false} {
		b.Run(fmt.Sprintf("200KB/request-plain=%v", plain), func(b *testing.B) {
			big.RequestPlain = plain
			b.SetBytes(int64(len(big.Request)))
			for b.Loop() {
				l, _ := encodeParts(big)
				l.release()
			}
		})
	}
}
