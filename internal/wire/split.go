package wire

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// Splitting a request body is the proxy's largest own cost on a long
// transcript. encoding/json validates and walks the body once per decode;
// SplitObject and SplitArray instead walk an already validated value once
// with jsontop, tracking only strings and nesting, and hand back sub-slices.

// SplitObject returns the members of a JSON object as raw values (last
// one wins for a repeated key, as encoding/json does). raw must be valid
// JSON (jsontop.Valid); anything but an object is an error.
func SplitObject(raw []byte) (map[string]json.RawMessage, error) {
	i := jsontop.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	out := map[string]json.RawMessage{}
	var err error
	jsontop.Object(raw, i, func(key []byte, start, end int) bool {
		var k string
		if k, err = jsontop.DecodeKey(key); err != nil {
			err = fmt.Errorf("%w: %v", ErrMalformed, err)
			return false
		}
		out[k] = raw[start:end:end]
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SplitArray returns the elements of a JSON array as raw values; null
// gives none. raw must be valid JSON.
func SplitArray(raw []byte) ([]json.RawMessage, error) {
	i := jsontop.SkipSpace(raw, 0)
	if i < len(raw) && raw[i] == 'n' {
		return nil, nil
	}
	if i >= len(raw) || raw[i] != '[' {
		return nil, fmt.Errorf("%w: not a JSON array", ErrMalformed)
	}
	out := []json.RawMessage{}
	for start, end := range jsontop.Elements(raw, i) {
		out = append(out, raw[start:end:end])
	}
	return out, nil
}

// Elements returns the elements of raw when it is an array (ok is false
// for any other value: callers decode that with encoding/json for its
// error). raw must be valid JSON, a member of a document DecodeObject or
// CheckBody accepted; the elements are slices of it.
func Elements(raw []byte) ([]json.RawMessage, bool) {
	if i := jsontop.SkipSpace(raw, 0); i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	out, err := SplitArray(raw)
	return out, err == nil
}

// ParseRequest validates body, then parses it with f.
func ParseRequest(f ToolLoop, body []byte) (*Request, error) {
	if err := CheckBody(body); err != nil {
		return nil, err
	}
	return f.ParseCheckedRequest(body)
}

// CheckBody validates a request body: it is JSON (jsontop.Valid).
func CheckBody(body []byte) error {
	if !jsontop.Valid(body) {
		return fmt.Errorf("%w: invalid JSON", ErrMalformed)
	}
	return nil
}
