package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

type got struct {
	Name, ID, Data, Raw string
}

func collect(t *testing.T, r io.Reader, max int) ([]got, error) {
	t.Helper()
	var out []got
	for ev, err := range Parse(r, max) {
		if err != nil {
			return out, err
		}
		out = append(out, got{ev.Name, ev.ID, string(ev.Data), string(ev.Raw)})
	}
	return out, nil
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []got
	}{
		{"single", "data: hi\n\n", []got{{"", "", "hi", "data: hi\n\n"}}},
		{"named with id", "event: ping\nid: 7\ndata: {}\n\n", []got{{"ping", "7", "{}", "event: ping\nid: 7\ndata: {}\n\n"}}},
		{"multi-line data", "data: a\ndata: b\n\n", []got{{"", "", "a\nb", "data: a\ndata: b\n\n"}}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []got{{"", "", "a", "data: a\r\n\r\n"}, {"", "", "b", "data: b\r\n\r\n"}}},
		{"lone cr", "data: a\r\rdata: b\r\r", []got{{"", "", "a", "data: a\r\r"}, {"", "", "b", "data: b\r\r"}}},
		{"no space after colon", "data:x\n\n", []got{{"", "", "x", "data:x\n\n"}}},
		{"comment-only block", ": keepalive\n\ndata: y\n\n", []got{{"", "", "", ": keepalive\n\n"}, {"", "", "y", "data: y\n\n"}}},
		{"blank lines between", "\n\ndata: z\n\n\n", []got{{"", "", "z", "data: z\n\n"}}},
		{"unterminated dropped", "data: a\n\ndata: partial", []got{{"", "", "a", "data: a\n\n"}}},
		{"bom", "\xef\xbb\xbfdata: a\n\n", []got{{"", "", "a", "\xef\xbb\xbfdata: a\n\n"}}},
		{"field without colon", "data\n\n", []got{{"", "", "", "data\n\n"}}},
		{"unknown field kept raw", "retry: 10\nfoo: bar\ndata: q\n\n", []got{{"", "", "q", "retry: 10\nfoo: bar\ndata: q\n\n"}}},
		{"done", "data: [DONE]\n\n", []got{{"", "", "[DONE]", "data: [DONE]\n\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				out, err := collect(t, r, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(out) != len(tt.want) {
					t.Fatalf("got %d events %q, want %q", len(out), out, tt.want)
				}
				for i := range out {
					if out[i] != tt.want[i] {
						t.Errorf("event %d = %q, want %q", i, out[i], tt.want[i])
					}
				}
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	in := "data: " + strings.Repeat("x", 100) + "\n\n"
	_, err := collect(t, strings.NewReader(in), 50)
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
	// Many small events are fine under a small limit.
	out, err := collect(t, strings.NewReader(strings.Repeat("data: a\n\n", 1000)), 50)
	if err != nil || len(out) != 1000 {
		t.Fatalf("got %d events, err %v", len(out), err)
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom))
	out, err := collect(t, r, 0)
	if len(out) != 1 || !errors.Is(err, boom) {
		t.Fatalf("out %q err %v", out, err)
	}
}

func TestParseEarlyBreak(t *testing.T) {
	n := 0
	for range Parse(strings.NewReader("data: a\n\ndata: b\n\n"), 0) {
		n++
		break
	}
	if n != 1 {
		t.Fatal(n)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec)
	events := []Event{
		{Name: "message_start", Data: []byte(`{"a":1}`)},
		{Data: []byte("line1\nline2\r\nline3")},
		{ID: "9", Data: nil},
	}
	for _, e := range events {
		if err := w.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Comment("keep\nalive"); err != nil {
		t.Fatal(err)
	}
	if !rec.Flushed {
		t.Error("writer did not flush")
	}
	want := "event: message_start\ndata: {\"a\":1}\n\ndata: line1\ndata: line2\ndata: line3\n\nid: 9\ndata: \n\n: keep alive\n\n"
	if rec.Body.String() != want {
		t.Fatalf("wire form:\n%q\nwant\n%q", rec.Body.String(), want)
	}
	out, err := collect(t, bytes.NewReader(rec.Body.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out[0].Name != "message_start" || out[1].Data != "line1\nline2\nline3" || out[2].ID != "9" || out[3].Data != "" {
		t.Fatalf("round trip: %q", out)
	}
}

func TestPrepareHeader(t *testing.T) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Length", "3")
	PrepareHeader(rec.Header())
	if rec.Header().Get("Content-Type") != "text/event-stream" || rec.Header().Get("Content-Length") != "" {
		t.Fatal(rec.Header())
	}
}

// referenceParse is a deliberately naive implementation of the WHATWG
// algorithm over the whole input, used to check Parse under fuzzing.
func referenceParse(in string) []got {
	in = strings.TrimPrefix(in, "\xef\xbb\xbf")
	var lines []string
	for len(in) > 0 {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, in+"\x00unterminated")
			break
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var out []got
	var name, id, data string
	hasData, n := false, 0
	for _, ln := range lines {
		if strings.HasSuffix(ln, "\x00unterminated") {
			break
		}
		if ln == "" {
			if n > 0 {
				if hasData {
					data = data[:len(data)-1]
				}
				out = append(out, got{Name: name, ID: id, Data: data})
			}
			name, id, data, hasData, n = "", "", "", false, 0
			continue
		}
		n++
		if ln[0] == ':' {
			continue
		}
		f, v, _ := strings.Cut(ln, ":")
		v = strings.TrimPrefix(v, " ")
		switch f {
		case "data":
			data += v + "\n"
			hasData = true
		case "event":
			name = v
		case "id":
			if !strings.Contains(v, "\x00") {
				id = v
			}
		}
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "event: x\r\ndata: y\r\n\r\n", "data: a\r\rdata:b\n\n", ": c\n\n", "\xef\xbb\xbfid: 1\ndata\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		want := referenceParse(in)
		var raw strings.Builder
		i := 0
		for ev, err := range Parse(iotest.HalfReader(strings.NewReader(in)), 1<<20) {
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if i >= len(want) {
				t.Fatalf("extra event %q", ev.Raw)
			}
			g := got{ev.Name, ev.ID, string(ev.Data), ""}
			if g != want[i] {
				t.Fatalf("event %d = %q, want %q", i, g, want[i])
			}
			raw.Write(ev.Raw)
			i++
		}
		if i != len(want) {
			t.Fatalf("got %d events, want %d", i, len(want))
		}
		// Raw blocks are verbatim: together they never exceed the input.
		if raw.Len() > len(in) {
			t.Fatalf("raw blocks (%d bytes) longer than the input (%d)", raw.Len(), len(in))
		}
		// Re-encoding and re-parsing preserves name and data.
		for ev, err := range Parse(strings.NewReader(in), 1<<20) {
			if err != nil || len(ev.Data) == 0 {
				continue
			}
			enc := AppendEvent(nil, Event{Name: ev.Name, Data: ev.Data})
			for ev2 := range Parse(bytes.NewReader(enc), 0) {
				if string(ev2.Data) != string(ev.Data) {
					t.Fatalf("re-encode changed data %q -> %q", ev.Data, ev2.Data)
				}
				break
			}
		}
	})
}

func TestEventSurvivesBreak(t *testing.T) {
	var last Event
	for ev := range Parse(strings.NewReader("data: first\n\ndata: second\n\n"), 0) {
		last = ev
		break
	}
	// Another parse must not reuse the buffer the kept event aliases.
	for range Parse(strings.NewReader("data: XXXXXXXXXXXXXXXX\n\n"), 0) {
	}
	if string(last.Data) != "first" || string(last.Raw) != "data: first\n\n" {
		t.Fatalf("kept event changed: %q %q", last.Data, last.Raw)
	}
}

// FuzzLineEnd holds lineEnd to bytes.IndexAny.
func FuzzLineEnd(f *testing.F) {
	for _, s := range []string{"", "a", "data: x\n", "a\rb\n", "a\nb\r", "\r\n", strings.Repeat("x", 100) + "\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := lineEnd(b), bytes.IndexAny(b, "\r\n"); got != want {
			t.Fatalf("lineEnd(%q) = %d, bytes.IndexAny %d", b, got, want)
		}
	})
}
