package audit

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzAppendEvent holds the audit line encoder to json.Marshal, byte for
// byte, over every field.
func FuzzAppendEvent(f *testing.F) {
	f.Add(int64(1764000000123456789), "alice", "request", "r1", "openai", "fake/m<x>", "", true, 200, int64(12), 3, 4, true, 7, "", "", "", 0, "", "ok", "", false)
	f.Add(int64(0), "", "tool_call", "", "", "", "GET /v1/responses/r", false, 0, int64(-1), 0, 0, false, 0, "bad \"quote\" \\ \n \x01 \xff é \u2028", "svc.t", "svc", 2, "native", "timeout", "feed-a", true)
	f.Add(int64(-62135596800000000), "x", "error", "", "", "", "", false, 0, int64(0), 0, 0, false, 0, "", "", "", 0, "", "", "", false)
	f.Fuzz(func(t *testing.T, ns int64, claw, typ, req, format, model, route string, stream bool, status int, lat int64,
		in, out int, manifest bool, tools int, errMsg, tool, service string, round int, mode, st, feed string, cached bool) {
		e := Event{TS: time.Unix(0, ns).UTC(), ClawID: claw, Type: typ, RequestID: req, Format: format, Model: model, Route: route,
			Stream: stream, StatusCode: status, Error: errMsg, Tool: tool, Service: service, Round: round, Mode: mode, Status: st,
			Feed: feed, Cached: cached, Stale: !cached, Mediated: manifest}
		if lat >= 0 {
			e.LatencyMS = &lat
		}
		if in != 0 {
			e.TokensIn, e.TokensOut, e.ToolsCount, e.Bytes = &in, &out, &tools, &out
		}
		if status%2 == 0 {
			e.ManifestPresent = &manifest
		}
		if round == 3 {
			e.PolicyFiltered = []Filtered{{Tool: tool, Rules: []string{mode}}}
		}
		if !stream { // file_repaired's fields, from the others'
			e.File = errMsg
			if lat >= 0 {
				e.Offset = &lat
			}
		} else { // result_stored and result_read's fields, from the others'
			e.Handle, e.Pattern = feed, route
			if lat >= 0 {
				e.Length = &lat
			}
		}
		want, werr := json.Marshal(e)
		got, gerr := appendEvent(nil, &e)
		if (werr != nil) != (gerr != nil) || (werr == nil && !bytes.Equal(got, want)) {
			t.Fatalf("appendEvent:\n%s (%v)\njson.Marshal:\n%s (%v)", got, gerr, want, werr)
		}
	})
}

// A file_repaired event names the file, where it was cut and how much.
func TestFileRepairedLine(t *testing.T) {
	var out bytes.Buffer
	l := New(&out)
	l.now = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	l.Emit(FileRepaired("alice", "/claw/history/alice/history.jsonl", 0, 4711))
	want := `{"ts":"2025-01-02T03:04:05Z","claw_id":"alice","type":"file_repaired","bytes":4711,"file":"/claw/history/alice/history.jsonl","offset":0}` + "\n"
	if out.String() != want {
		t.Fatalf("got  %s\nwant %s", out.String(), want)
	}
}

func BenchmarkEmit(b *testing.B) {
	l := New(discard{})
	lat, n := int64(12), 3
	e := Event{ClawID: "alice", Type: TypeResponse, RequestID: "req_0123456789", Format: "openai", Model: "fake/gpt-4o",
		StatusCode: 200, LatencyMS: &lat, TokensIn: &n, TokensOut: &n, ManifestPresent: new(bool), ToolsCount: &n}
	for b.Loop() {
		l.Emit(e)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkEncode compares the encoder with json.Marshal on a typical
// response event.
func BenchmarkEncode(b *testing.B) {
	lat, n := int64(12), 3
	e := Event{TS: time.Now(), ClawID: "alice", Type: TypeResponse, RequestID: "req_0123456789", Format: "openai", Model: "fake/gpt-4o",
		StatusCode: 200, LatencyMS: &lat, TokensIn: &n, TokensOut: &n, ManifestPresent: new(bool), ToolsCount: &n}
	b.Run("appendEvent", func(b *testing.B) {
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf, _ = appendEvent(buf[:0], &e)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(e)
		}
	})
}
