package wire

import (
	"bytes"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// The helpers below read and edit a body in place, by byte offsets, for
// the paths that must not decode it (feed injection, stream observation).
// They are shared by the formats; none knows any format.

// Span is the byte range [Start, End) of one JSON value in a document.
type Span struct{ Start, End int }

// LastMember returns the span of the value of the last member named key
// of the object starting at b[obj]: duplicate keys resolve to the last one
// in encoding/json and in the providers' parsers alike. b has been checked
// by jsontop.Valid.
func LastMember(b []byte, obj int, key string) (v Span, ok bool) {
	jsontop.Object(b, obj, func(k []byte, start, end int) bool {
		if jsontop.KeyEquals(k, key) {
			v, ok = Span{start, end}, true
		}
		return true
	})
	return v, ok
}

// StringValue decodes v when it is a JSON string.
func StringValue(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, err := jsontop.Unquote(v)
	if err != nil {
		return "", false
	}
	return s, true
}

// WriteJSONString writes s as a JSON string without HTML escaping (feed
// markdown is full of <, > and &; escaping them only costs tokens).
func WriteJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// Splice returns a new slice: body with body[from:to] replaced by ins.
func Splice(body []byte, from, to int, ins []byte) []byte {
	out := make([]byte, 0, len(body)-(to-from)+len(ins))
	out = append(out, body[:from]...)
	out = append(out, ins...)
	return append(out, body[to:]...)
}

// HasStringMember reports whether data has key (a quoted member name, e.g.
// `"stop_reason"`) followed by a string value: a non-null stop or finish
// reason. It scans bytes and decodes nothing.
func HasStringMember(data, key []byte) bool {
	for {
		i := bytes.Index(data, key)
		if i < 0 {
			return false
		}
		j := jsontop.SkipSpace(data, i+len(key))
		if j < len(data) && data[j] == ':' {
			if j = jsontop.SkipSpace(data, j+1); j < len(data) && data[j] == '"' {
				return true
			}
		}
		data = data[i+len(key):]
	}
}
