package feeds

import (
	"bytes"
	"encoding/json"
	"iter"
)

// A minimal scanner over a JSON document already checked by json.Valid. It
// finds where values start and end so the injectors can splice bytes in
// without decoding and re-encoding the rest of a request.

// span is the byte range [start, end) of one JSON value in a document.
type span struct{ start, end int }

// member is one member of an object: its decoded key and its value's span.
type member struct {
	key string
	val span
}

func skipWS(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipValue returns the index just after the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // number, true, false, null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// skipString returns the index just after the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// members lists the members of the object starting at b[i], in order.
func members(b []byte, i int) []member {
	var ms []member
	i = skipWS(b, i+1)
	for i < len(b) && b[i] != '}' {
		ks := i
		i = skipString(b, i)
		key := decodeKey(b[ks:i])
		i = skipWS(b, i)
		i = skipWS(b, i+1) // ':'
		vs := i
		i = skipValue(b, i)
		ms = append(ms, member{key: key, val: span{vs, i}})
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
		}
	}
	return ms
}

// elements yields the spans of the elements of the array starting at b[i],
// in order; a caller that stops early does not pay for the rest.
func elements(b []byte, i int) iter.Seq[span] {
	return func(yield func(span) bool) {
		i := skipWS(b, i+1)
		for i < len(b) && b[i] != ']' {
			vs := i
			i = skipValue(b, i)
			if !yield(span{vs, i}) {
				return
			}
			i = skipWS(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
			}
		}
	}
}

// emptyArray reports whether the array starting at b[i] has no elements.
func emptyArray(b []byte, i int) bool {
	i = skipWS(b, i+1)
	return i >= len(b) || b[i] == ']'
}

// decodeKey decodes a quoted key, taking the fast path without escapes.
func decodeKey(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1])
	}
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}

// lastMember returns the last member named key: duplicate keys resolve to
// the last one in encoding/json and in the providers' parsers alike.
func lastMember(ms []member, key string) (member, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i], true
		}
	}
	return member{}, false
}

// stringValue decodes v when it is a JSON string.
func stringValue(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
