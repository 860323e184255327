package wire

import (
	"encoding/json"
	"fmt"
)

// Splitting a request body is the proxy's largest own cost on a long
// transcript. encoding/json validates and walks the body once per decode;
// SplitObject and SplitArray instead walk an already validated value once,
// tracking only strings and nesting, and hand back sub-slices.

// SplitObject returns the members of a JSON object as raw values (last
// one wins for a repeated key, as encoding/json does). raw must be valid
// JSON (json.Valid); anything but an object is an error.
func SplitObject(raw []byte) (map[string]json.RawMessage, error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	out := map[string]json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return out, nil
	}
	for i < len(raw) {
		kEnd := skipString(raw, i)
		key, err := unquote(raw[i:kEnd])
		if err != nil {
			return nil, err
		}
		i = skipSpace(raw, kEnd)
		i = skipSpace(raw, i+1) // ':'
		vEnd := skipValue(raw, i)
		out[key] = raw[i:vEnd:vEnd]
		i = skipSpace(raw, vEnd)
		if i >= len(raw) || raw[i] == '}' {
			break
		}
		i = skipSpace(raw, i+1) // ','
	}
	return out, nil
}

// SplitArray returns the elements of a JSON array as raw values; null
// gives none. raw must be valid JSON.
func SplitArray(raw []byte) ([]json.RawMessage, error) {
	i := skipSpace(raw, 0)
	if i < len(raw) && raw[i] == 'n' {
		return nil, nil
	}
	if i >= len(raw) || raw[i] != '[' {
		return nil, fmt.Errorf("%w: not a JSON array", ErrMalformed)
	}
	var out []json.RawMessage
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return []json.RawMessage{}, nil
	}
	for i < len(raw) {
		end := skipValue(raw, i)
		out = append(out, raw[i:end:end])
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] == ']' {
			break
		}
		i = skipSpace(raw, i+1)
	}
	return out, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
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
		return len(b)
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

// unquote decodes a JSON string literal, without a decoder when it holds
// no escapes.
func unquote(lit []byte) (string, error) {
	if n := len(lit); n >= 2 && plain(lit[1:n-1]) {
		return string(lit[1 : n-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return s, nil
}

// DecodeBody validates a request body once and splits its top level.
func DecodeBody(body []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(body) {
		return nil, fmt.Errorf("%w: invalid JSON", ErrMalformed)
	}
	return SplitObject(body)
}
