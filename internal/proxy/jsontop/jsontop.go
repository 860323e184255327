// Package jsontop finds the top-level members of a JSON object without
// decoding the document: the proxy routes on "model" and "stream" and reads
// "usage" from responses, and a full decode of a 1 KB body costs more than
// the rest of a passthrough request. It never allocates and never panics,
// whatever the input; it does NOT validate (callers that need validity use
// json.Valid, or decode the member they found, which validates it).
package jsontop

import "encoding/json"

// Walk calls fn for each member of the top-level object in b, in order,
// with the key's raw bytes (between the quotes, escapes undecoded) and the
// value's span b[start:end]. fn returns false to stop. ok is false when b
// does not start with an object or ends before it closes.
func Walk(b []byte, fn func(key []byte, start, end int) bool) (ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	for i < len(b) {
		switch b[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(b, i+1)
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
		i = skipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		start := skipSpace(b, i+1)
		end := SkipValue(b, start)
		if end > len(b) || end <= start {
			return false
		}
		if !fn(key, start, end) {
			return true
		}
		i = skipSpace(b, end)
	}
	return false
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
	if plain(raw) {
		return string(raw) == key
	}
	// Escapes, or non-ASCII that may be invalid UTF-8 (which decodes to
	// U+FFFD): decode as a JSON parser would. Rare in practice.
	lit := make([]byte, 0, len(raw)+2)
	lit = append(append(append(lit, '"'), raw...), '"')
	var s string
	return json.Unmarshal(lit, &s) == nil && s == key
}

func plain(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), or len(b)+1 when it is unterminated.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
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
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		return i
	}
}
