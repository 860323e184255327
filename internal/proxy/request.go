package proxy

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// requestInfo is what the passthrough path needs from a runner's body: the
// model (and where its value sits in the bytes) and the stream flag;
// Provider and Upstream are filled by the modelRouter. The
// rest of the document is never decoded (ARCHITECTURE.md: "the passthrough
// path must not parse more than it needs").
type requestInfo struct {
	Model    string
	Provider string
	Upstream string // the model name sent upstream
	Stream   bool
	// modelStart/modelEnd delimit the model value, quotes included.
	modelStart, modelEnd int
}

// errRequest is a 400 whose message is safe to show the runner.
type errRequest struct{ msg string }

func (e *errRequest) Error() string { return e.msg }

func badRequest(msg string) error { return &errRequest{msg} }

// scanRequest validates body as one JSON object and reads its top-level
// "model" and "stream" members. It rejects duplicate "model" or "stream"
// keys: parsers disagree on which copy wins, and the proxy must route on the
// same value the provider will read.
func scanRequest(body []byte) (requestInfo, error) {
	var info requestInfo
	if !jsontop.Valid(body) {
		return info, badRequest("request body is not valid JSON")
	}
	seenModel, seenStream := false, false
	var err error
	isObject := jsontop.Walk(body, func(key []byte, start, end int) bool {
		switch {
		case jsontop.KeyEquals(key, "model"):
			if seenModel {
				err = badRequest(`request body has more than one "model" member`)
				return false
			}
			seenModel = true
			if body[start] != '"' {
				err = badRequest(`"model" must be a string: a model name, or "<provider>/<model>"`)
				return false
			}
			info.Model = decodeString(body[start:end])
			info.modelStart, info.modelEnd = start, end
		case jsontop.KeyEquals(key, "stream"):
			if seenStream {
				err = badRequest(`request body has more than one "stream" member`)
				return false
			}
			seenStream = true
			switch string(body[start:end]) {
			case "true":
				info.Stream = true
			case "false", "null":
			default:
				err = badRequest(`"stream" must be true or false`)
				return false
			}
		}
		return true
	})
	if !isObject {
		return info, badRequest("request body must be a JSON object")
	}
	if err != nil {
		return info, err
	}
	if !seenModel || info.Model == "" {
		return info, badRequest(`"model" is required: a model name, or "<provider>/<model>"`)
	}
	return info, nil
}

// rewriteModel returns a body with the model value replaced by
// info.Upstream; every other byte is kept as it came. A model sent as it
// came (a bare name) returns body itself.
func rewriteModel(body []byte, info requestInfo) []byte {
	if info.Upstream == info.Model {
		return body
	}
	// Room for the plain case; appendJSONString grows it if escapes are
	// needed.
	out := make([]byte, 0, len(body)-(info.modelEnd-info.modelStart)+len(info.Upstream)+2)
	out = append(out, body[:info.modelStart]...)
	out = appendJSONString(out, info.Upstream)
	return append(out, body[info.modelEnd:]...)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func plainASCII(b []byte) bool {
	for _, c := range b {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// decodeString decodes a JSON string literal (quotes included).
func decodeString(lit []byte) string {
	inner := lit[1 : len(lit)-1]
	if plainASCII(inner) {
		return string(inner)
	}
	// Escapes, or non-ASCII that may be invalid UTF-8: decode as the
	// provider's JSON parser will (invalid bytes become U+FFFD).
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// quoteForMessage quotes a runner-supplied value for an error message,
// bounded so a huge value cannot bloat the response.
func quoteForMessage(s string) string {
	const max = 200
	if len(s) > max {
		s = s[:max] + "…"
	}
	q, _ := json.Marshal(s)
	return string(q)
}
