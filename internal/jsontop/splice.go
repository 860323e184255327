package jsontop

import (
	"bytes"
	"encoding/json"
)

// The helpers below read and edit a body in place, by byte offsets, for
// the paths that must not decode it (feed injection, stream observation).
// They are shared by the formats; none knows any format.

// Span is the byte range [Start, End) of one JSON value in a document.
type Span struct{ Start, End int }

// LastMember returns the span of the value of the last member named key
// of the object starting at b[obj]: duplicate keys resolve to the last one
// in encoding/json and in the providers' parsers alike. b has been checked
// by Valid.
func LastMember(b []byte, obj int, key string) (v Span, ok bool) {
	Object(b, obj, func(k []byte, start, end int) bool {
		if KeyEquals(k, key) {
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
	s, err := Unquote(v)
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

// IndexKey is bytes.Index for a quoted member name (`"usage"`): it
// looks for the name and its closing quote, then checks the quote before.
// A pattern that starts with a quote, JSON's most common byte, keeps
// bytes.Index on its slow path, stopping at every string; the name's
// first letter is rare.
func IndexKey(data, key []byte) int {
	tail := key[1:]
	for from := 1; from <= len(data); {
		i := bytes.Index(data[from:], tail)
		if i < 0 {
			return -1
		}
		if at := from + i - 1; data[at] == key[0] {
			return at
		}
		from += i + 1
	}
	return -1
}

// HasStringMember reports whether data has key (a quoted member name, e.g.
// `"stop_reason"`) followed by a string value: a non-null stop or finish
// reason. It scans bytes and decodes nothing.
func HasStringMember(data, key []byte) bool {
	for {
		i := IndexKey(data, key)
		if i < 0 {
			return false
		}
		j := SkipSpace(data, i+len(key))
		if j < len(data) && data[j] == ':' {
			if j = SkipSpace(data, j+1); j < len(data) && data[j] == '"' {
				return true
			}
		}
		data = data[i+len(key):]
	}
}

// WithMember returns a copy of the object body (checked by Valid)
// with its top-level member key set to value: in place, where key is a
// member once, so every other byte stays as it was; at the end, where key
// is absent. ok is false where key is a member more than once or body is
// not an object: the caller encodes the document itself.
func WithMember(body []byte, key string, value []byte) (out []byte, ok bool) {
	obj := SkipSpace(body, 0)
	var at Span
	n := 0
	if !Object(body, obj, func(k []byte, start, end int) bool {
		if KeyEquals(k, key) {
			at, n = Span{start, end}, n+1
		}
		return true
	}) {
		return nil, false
	}
	switch n {
	case 1:
		return Splice(body, at.Start, at.End, value), true
	case 0:
		member := make([]byte, 0, len(key)+len(value)+4)
		if !Empty(body, obj) {
			member = append(member, ',')
		}
		member = append(AppendString(member, key), ':')
		member = append(member, value...)
		closing := SkipValue(body, obj) - 1
		return Splice(body, closing, closing, member), true
	}
	return nil, false
}
