package openai

import (
	"bytes"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// Chat completions report a stream's usage only when the request asks
// for it (stream_options.include_usage): one more chunk, with no
// choices, before [DONE], and "usage":null in every other chunk. cllama
// asks for it upstream to cost the stream, and takes both out again for
// a runner that did not ask, so its stream is what it would have been.

// StreamUsageRequested reports whether a chat request asks for its
// stream's usage.
func StreamUsageRequested(body []byte) bool {
	so, ok := jsontop.Find(body, "stream_options")
	if !ok {
		return false
	}
	v, ok := jsontop.Find(so, "include_usage")
	return ok && string(v) == "true"
}

var askUsage = []byte(`{"include_usage":true}`)

// WithStreamUsage is a chat request body with stream_options.include_usage
// set, its other stream options kept; false when body is not an object
// whose stream_options is an object or null.
func WithStreamUsage(body []byte) ([]byte, bool) {
	start, end := -1, -1
	if !jsontop.Walk(body, func(key []byte, s, e int) bool {
		if jsontop.KeyEquals(key, "stream_options") {
			start, end = s, e
		}
		return true
	}) {
		return nil, false
	}
	if start < 0 {
		i := bytes.IndexByte(body, '{')
		if i < 0 {
			return nil, false
		}
		sep := []byte(",")
		if jsontop.Empty(body, i) {
			sep = nil
		}
		out := make([]byte, 0, len(body)+40)
		out = append(append(append(out, body[:i+1]...), `"stream_options":`...), askUsage...)
		return append(append(out, sep...), body[i+1:]...), true
	}
	val := askUsage
	if string(body[start:end]) != "null" {
		var m map[string]json.RawMessage
		if json.Unmarshal(body[start:end], &m) != nil || m == nil {
			return nil, false
		}
		for k := range m {
			if jsontop.Fold(k) == jsontop.Fold("include_usage") {
				delete(m, k)
			}
		}
		m["include_usage"] = json.RawMessage("true")
		var err error
		if val, err = json.Marshal(m); err != nil {
			return nil, false
		}
	}
	out := make([]byte, 0, len(body)+len(val))
	return append(append(append(out, body[:start]...), val...), body[end:]...), true
}

// StripStreamUsage undoes, in one chunk of a stream whose usage cllama
// asked for, what asking added: drop reports the usage chunk itself (no
// choices, a usage object), which the runner must not see; otherwise out
// is data without its top-level "usage":null member (data itself when it
// has none).
func StripStreamUsage(data []byte) (out []byte, drop bool) {
	if bytes.Index(data, usageKey) < 0 && bytes.IndexByte(data, '\\') < 0 {
		return data, false
	}
	var keyAt, valEnd = -1, -1
	emptyChoices, usageObject := false, false
	jsontop.Walk(data, func(key []byte, s, e int) bool {
		switch {
		case jsontop.KeyEquals(key, "choices"):
			emptyChoices = data[s] == '[' && jsontop.Empty(data, s)
		case jsontop.KeyEquals(key, "usage"):
			usageObject = data[s] == '{'
			if string(data[s:e]) == "null" {
				keyAt, valEnd = cap(data)-cap(key)-1, e // the key's opening quote
			}
		}
		return true
	})
	if emptyChoices && usageObject {
		return nil, true
	}
	if keyAt < 0 || keyAt >= len(data) || data[keyAt] != '"' {
		return data, false
	}
	// Take the member out with the comma before it, else the one after.
	from, to := keyAt, valEnd
	i := from - 1
	for i >= 0 && isSpace(data[i]) {
		i--
	}
	if i >= 0 && data[i] == ',' {
		from = i
	} else {
		j := to
		for j < len(data) && isSpace(data[j]) {
			j++
		}
		if j < len(data) && data[j] == ',' {
			to = j + 1
		}
	}
	out = make([]byte, 0, len(data)-(to-from))
	out = append(append(out, data[:from]...), data[to:]...)
	// A repeated member: take the others out too (each pass shortens it).
	out, _ = StripStreamUsage(out)
	return out, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// AskStreamUsage implements the proxy's stream usage asker: the body
// with the usage asked for, and whether the runner had not asked itself
// (false: the body is sent as it is, the stream relayed as it comes).
func (Format) AskStreamUsage(body []byte) ([]byte, bool) {
	if StreamUsageRequested(body) {
		return body, false
	}
	return WithStreamUsage(body)
}

// StripStreamUsage implements the proxy's stream usage asker.
func (Format) StripStreamUsage(data []byte) ([]byte, bool) { return StripStreamUsage(data) }
