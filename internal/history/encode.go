package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// encodeParts encodes e as one line ending in '\n', valid UTF-8 whatever
// the exchange held (invalid bytes become U+FFFD, counted in
// UTF8Replaced), as the slices that make the line, written one
// after the other: the request and response bodies, most of a line, are
// the caller's own bytes rather than copies.
func encodeParts(e Entry) (*line, error) {
	e.UTF8Replaced += validUTF8(&e)
	// No HTML escaping: requests and responses are kept as received, and
	// escaping every '<', '>' and '&' as \u00XX could grow a line sixfold,
	// past what readers accept (MaxLineBytes).
	// encoding/json would compact and re-validate each byte of the bodies;
	// a body that is one line already and valid JSON (what the proxy hands
	// over: it checked it at the edge) is spliced in as it is, after one
	// fast check.
	// A request the proxy's edge found plain (ASCII, one line) is
	// neither scanned for invalid UTF-8 (validUTF8) nor for line breaks.
	req, resp := e.Request, e.Response
	spliceReq, spliceResp := spliceable(req, e.BodiesValid, e.RequestPlain), spliceable(resp, e.BodiesValid, false)
	l := linePool.Get().(*line)
	if appendPlain(l, &e, spliceReq, spliceResp) {
		return l, nil
	}
	parts, err := reflectParts(e, spliceReq, spliceResp)
	if err != nil {
		l.release()
		return nil, err
	}
	l.parts = parts
	return l, nil
}

// line is one entry's encoding: the parts one write sends, which are
// slices of buf (the line's own bytes, reused from one entry to the next)
// and the bodies spliced in between them.
type line struct {
	buf   []byte
	parts net.Buffers
	arr   [5][]byte // parts' backing: at most two bodies and three pieces
	// n is the line's length. done and err are its outcome, set by the
	// goroutine that wrote it; wake tells the goroutine waiting for it
	// that it was written, or that it is to write.
	n    int64
	done bool
	err  error
	wake chan struct{}
}

// linePool holds lines between entries: a line's buffer is most of what
// recording an exchange allocates.
var linePool = sync.Pool{New: func() any { return &line{wake: make(chan struct{}, 1)} }}

// maxPooledLine bounds the buffer a pooled line keeps; a longer one (a
// long body that could not be spliced) is left to the collector.
const maxPooledLine = 64 << 10

// release returns l to the pool, holding no body.
func (l *line) release() {
	if cap(l.buf) > maxPooledLine {
		l.buf = nil
	}
	clear(l.arr[:])
	l.parts = nil
	l.n, l.done, l.err = 0, false, nil
	linePool.Put(l)
}

// reflectParts is encodeParts with encoding/json, for any entry.
func reflectParts(e Entry, spliceReq, spliceResp bool) (net.Buffers, error) {
	req, resp := e.Request, e.Response
	if spliceReq {
		e.Request = placeholder
	}
	if spliceResp {
		e.Response = placeholder
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil { // Encode ends the line with '\n'
		return nil, fmt.Errorf("history: encode entry %s: %w", e.ID, err)
	}
	parts := net.Buffers{buf.Bytes()}
	if spliceReq {
		parts = splice(parts, `"request":0`, `"request":`, req)
	}
	if spliceResp {
		parts = splice(parts, `"response":0`, `"response":`, resp)
	}
	return parts, nil
}

// placeholder stands in for a body spliced in after encoding.
var placeholder = json.RawMessage("0")

// spliceMin is the smallest body worth a part of its own in a line
// (smaller ones are copied into the line's buffer).
const spliceMin = 1 << 10

// spliceable reports whether raw can go into a line as it is: on one line
// (no raw CR or LF: inside JSON strings they are escaped, so any is
// whitespace a line cannot hold) and valid. Kept as it came, spaces
// included; any other body is compacted by encoding/json. valid and
// oneLine say what the caller knows already, so raw is not scanned for it.
func spliceable(raw json.RawMessage, valid, oneLine bool) bool {
	// Two IndexByte scans run word-wide; ContainsAny goes byte by byte.
	return len(raw) > 0 && (oneLine || bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0) && (valid || jsontop.Valid(raw))
}

// splice replaces the first occurrence of key+"0" in the last part with
// key, then raw as a part of its own. The key appears once unescaped in a
// line: inside strings quotes are escaped.
func splice(parts net.Buffers, marker, key string, raw json.RawMessage) net.Buffers {
	last := parts[len(parts)-1]
	i := bytes.Index(last, []byte(marker))
	if i < 0 {
		return parts // cannot happen: the marker was encoded above
	}
	head := append(last[:i:i], key...)
	return append(parts[:len(parts)-1], head, bytes.TrimSpace(raw), last[i+len(marker):])
}

// validUTF8 replaces each byte of e that is not part of valid UTF-8 with
// U+FFFD and returns how many it replaced. Raw JSON can hold such bytes
// only inside strings (anywhere else they are a syntax error), so it stays
// valid JSON. What e shares with the caller (raw messages, the trace) is
// copied before it changes, never changed in place.
func validUTF8(e *Entry) int {
	n := 0
	for _, s := range []*string{&e.ID, &e.AgentID, &e.Pod, &e.Format, &e.Model, &e.Status, &e.Error} {
		n += validString(s)
	}
	if !e.RequestPlain {
		n += validRaw(&e.Request)
	}
	n += validRaw(&e.Response)
	copied := false
	for i := range e.ToolTrace {
		for j := range e.ToolTrace[i].ToolCalls {
			tc := e.ToolTrace[i].ToolCalls[j]
			k := validString(&tc.Name) + validString(&tc.Service) + validRaw(&tc.Arguments) + validRaw(&tc.ModelArguments) + validRaw(&tc.Result)
			if k == 0 {
				continue
			}
			if !copied {
				e.ToolTrace = append([]Round(nil), e.ToolTrace...)
				copied = true
			}
			calls := append([]ToolCall(nil), e.ToolTrace[i].ToolCalls...)
			calls[j] = tc
			e.ToolTrace[i].ToolCalls = calls
			n += k
		}
	}
	return n
}

func validString(s *string) int {
	if utf8.ValidString(*s) {
		return 0
	}
	b, n := replaceInvalid([]byte(*s))
	*s = string(b)
	return n
}

func validRaw(m *json.RawMessage) int {
	if utf8.Valid(*m) {
		return 0
	}
	b, n := replaceInvalid(*m)
	*m = b
	return n
}

// replaceInvalid returns a copy of b with each invalid byte replaced by
// U+FFFD (as encoding/json does for strings), and the count.
func replaceInvalid(b []byte) ([]byte, int) {
	out := make([]byte, 0, len(b)+len(b)/8)
	n := 0
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
			n++
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out, n
}
