// Package jsontop is the one place that scans JSON at the byte level:
// it finds the members of an object and the elements of an array, and
// where each value starts and ends, without decoding the document, and it
// validates a document (Valid) faster than encoding/json.
//
// The proxy routes on "model" and "stream" and reads "usage" from
// responses, feeds splices text into a request, and wire splits a body into
// raw members; a full decode of a 1 KB body costs more than the rest of a
// passthrough request. The scanners never allocate and never panic,
// whatever the input, but they do NOT validate: callers that need validity
// call Valid first, or decode the member they found, which validates it.
// Decoding values is left to encoding/json; this package only decodes
// string literals (Unquote, DecodeKey) and the plain shapes the stream
// assemblers read (members.go: StructMembers, DecodeString, DecodeInt),
// taking a fast path when there is nothing to unescape, and edits a body
// in place by byte offsets (splice.go: LastMember, Splice, WithMember).
package jsontop

import (
	"bytes"
	"encoding/json"
	"iter"
	"unicode/utf8"
)

// Walk calls fn for each member of the top-level object in b, in order,
// with the key's raw bytes (between the quotes, escapes undecoded) and the
// value's span b[start:end]. fn returns false to stop. ok is false when b
// does not start with an object or ends before it closes.
func Walk(b []byte, fn func(key []byte, start, end int) bool) (ok bool) {
	return Object(b, SkipSpace(b, 0), fn)
}

// Object is Walk for the object that starts at b[i] (a '{'), anywhere in b:
// the spans it passes fn index b.
func Object(b []byte, i int, fn func(key []byte, start, end int) bool) (ok bool) {
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = SkipSpace(b, i+1)
	for i < len(b) {
		switch b[i] {
		case '}':
			return true
		case ',':
			i = SkipSpace(b, i+1)
			continue
		case '"':
		default:
			return false
		}
		keyEnd := skipString(b, i)
		if keyEnd > len(b) {
			return false
		}
		key := b[i+1 : keyEnd-1]
		i = SkipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		start := SkipSpace(b, i+1)
		end := SkipValue(b, start)
		if end > len(b) || end <= start {
			return false
		}
		if !fn(key, start, end) {
			return true
		}
		i = SkipSpace(b, end)
	}
	return false
}

// Elements yields the span b[start:end] of each element of the array that
// starts at b[i] (a '['), in order; a caller that stops early does not pay
// for the rest. It yields nothing when b[i] is not '[', and stops at the
// first element it cannot delimit.
func Elements(b []byte, i int) iter.Seq2[int, int] {
	return func(yield func(start, end int) bool) {
		if i >= len(b) || b[i] != '[' {
			return
		}
		j := SkipSpace(b, i+1)
		for j < len(b) && b[j] != ']' {
			end := SkipValue(b, j)
			if end > len(b) || end <= j {
				return
			}
			if !yield(j, end) {
				return
			}
			j = SkipSpace(b, end)
			if j < len(b) && b[j] == ',' {
				j = SkipSpace(b, j+1)
			}
		}
	}
}

// Empty reports whether the object or array that starts at b[i] has no
// members or elements (white space aside).
func Empty(b []byte, i int) bool {
	i = SkipSpace(b, i+1)
	return i >= len(b) || b[i] == '}' || b[i] == ']'
}

// Find returns the value of the first top-level member named key (escaped
// keys are decoded before comparing). ok is false when there is none.
func Find(b []byte, key string) (value []byte, ok bool) {
	Walk(b, func(k []byte, start, end int) bool {
		if KeyEquals(k, key) {
			value, ok = b[start:end], true
			return false
		}
		return true
	})
	return value, ok
}

// KeyEquals reports whether the raw key bytes (as Walk passes them) spell
// key once JSON escapes are decoded.
func KeyEquals(raw []byte, key string) bool {
	if ascii(raw) {
		return string(raw) == key
	}
	// Escapes, or non-ASCII that may be invalid UTF-8 (which decodes to
	// U+FFFD): decode as a JSON parser would. Rare in practice.
	s, err := unquoteSlow(raw)
	return err == nil && s == key
}

// DecodeKey decodes the raw key bytes (as Walk passes them) as
// encoding/json would; the error is encoding/json's.
func DecodeKey(raw []byte) (string, error) {
	if plain(raw) {
		return string(raw), nil
	}
	return unquoteSlow(raw)
}

// Unquote decodes the JSON string literal lit (quotes included) as
// encoding/json would, without a decoder when it holds nothing to
// unescape; the error is encoding/json's.
func Unquote(lit []byte) (string, error) {
	if n := len(lit); n >= 2 && lit[0] == '"' && lit[n-1] == '"' && plain(lit[1:n-1]) {
		return string(lit[1 : n-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}

// PlainBody returns the body of the JSON string literal lit (quotes
// included) when it decodes to itself, as Unquote's fast path: the text
// without a copy. ok is false for anything else.
func PlainBody(lit []byte) (body []byte, ok bool) {
	if n := len(lit); n >= 2 && lit[0] == '"' && lit[n-1] == '"' && plain(lit[1:n-1]) {
		return lit[1 : n-1], true
	}
	return nil, false
}

// unquoteSlow decodes the body of a string literal with encoding/json.
func unquoteSlow(raw []byte) (string, error) {
	lit := make([]byte, 0, len(raw)+2)
	lit = append(append(append(lit, '"'), raw...), '"')
	return Unquote(lit)
}

// ascii reports whether b holds neither escapes nor non-ASCII bytes.
func ascii(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// plain reports whether a string literal's body decodes to itself: no
// escapes, no quotes, no control characters, valid UTF-8 (encoding/json
// replaces invalid bytes with U+FFFD).
func plain(b []byte) bool {
	isASCII := true
	for _, c := range b {
		if c == '\\' || c == '"' || c < 0x20 {
			return false
		}
		if c >= 0x80 {
			isASCII = false
		}
	}
	return isASCII || utf8.Valid(b)
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first byte at or after b[i] that is
// not JSON white space (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), or len(b)+1 when it is unterminated. It jumps from quote to
// quote (bytes.IndexByte scans many bytes at a time) and looks for escapes
// only between them: message content is long runs of plain text.
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b) + 1
		}
		e := bytes.IndexByte(b[i:i+q], '\\')
		if e < 0 {
			return i + q + 1
		}
		i += e + 2 // the escape and the byte it escapes
	}
	return len(b) + 1
}

// SkipValue returns the index just after the value starting at b[i], or
// len(b)+1 when the value is unterminated. Scalars end at the next
// delimiter; their syntax is not checked.
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return len(b) + 1
	}
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
		return len(b) + 1
	case ',', '}', ']', ':':
		return i // an empty value: the caller treats end <= start as bad
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && !IsSpace(b[i]) {
			i++
		}
		return i
	}
}
