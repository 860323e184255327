package proxy

import (
	"encoding/json"
	"fmt"
	"strconv"
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
	// MaxOutput is the request's cap on output tokens (max_tokens,
	// max_completion_tokens, max_output_tokens); 0 when it sets none.
	MaxOutput int
	// Plain: the body is ASCII with no raw line break (jsontop.ValidWalk),
	// which history would otherwise scan it again to learn.
	Plain bool
	// modelStart/modelEnd delimit the model value, quotes included.
	modelStart, modelEnd int
}

// errRequest is a 400 whose message is safe to show the runner.
type errRequest struct{ msg string }

func (e *errRequest) Error() string { return e.msg }

func badRequest(msg string) error { return &errRequest{msg: msg} }

// scanRequest validates body as one JSON object and reads its top-level
// "model" and "stream" members. It refuses a body in which a member the
// format governs (shape: wire.Format.Governed), at the top level or in
// the objects cllama looks into, is repeated or spelled in another case:
// readers disagree on which copy wins and on case, and the proxy must
// route, check and record the same values the provider will read.
func scanRequest(body []byte, shape *jsontop.Shape) (requestInfo, error) {
	var info requestInfo
	var seen uint64
	var err error
	// One pass validates the body and reads its members; the first
	// problem with a member is reported only for a valid body.
	valid, isObject, plain := jsontop.ValidWalk(body, func(key []byte, start, end int) {
		if err != nil {
			return
		}
		if a := shape.MemberAmbiguity(key, body[start:end], &seen); a != nil {
			err = ambiguous(a)
			return
		}
		switch {
		case jsontop.KeyEquals(key, "model"):
			if body[start] != '"' {
				err = badRequest(`"model" must be a string: a model name, or "<provider>/<model>"`)
				return
			}
			info.Model = decodeString(body[start:end])
			info.modelStart, info.modelEnd = start, end
		case isMaxOutput(key):
			if n, perr := strconv.Atoi(string(body[start:end])); perr == nil && n > 0 {
				info.MaxOutput = max(info.MaxOutput, n)
			}
		case jsontop.KeyEquals(key, "stream"):
			switch string(body[start:end]) {
			case "true":
				info.Stream = true
			case "false", "null":
			default:
				err = badRequest(`"stream" must be true or false`)
			}
		}
	})
	if !valid {
		return requestInfo{}, badRequest("request body is not valid JSON")
	}
	if !isObject {
		return info, badRequest("request body must be a JSON object")
	}
	if err != nil {
		return info, err
	}
	if info.modelEnd == 0 || info.Model == "" {
		return info, badRequest(`"model" is required: a model name, or "<provider>/<model>"`)
	}
	info.Plain = plain
	return info, nil
}

// ambiguous is the refusal of a body with an ambiguous member: a 400
// whose message names the member as written and where it is.
func ambiguous(a *jsontop.Ambiguity) error {
	return &errRequest{msg: a.Error()}
}

// upstreamBody is body (the runner's, or the decorator's rewrite of it)
// with the model value replaced by info.Upstream, as the slices to send:
// body before the value, the new value, body after it. Every other byte
// is kept as it came, and nothing is copied. A model sent as it came (a
// bare name) is body itself.
func upstreamBody(body, original []byte, info requestInfo) ([][]byte, error) {
	if info.Upstream == info.Model {
		return [][]byte{body}, nil
	}
	start, end := info.modelStart, info.modelEnd
	if !sameSlice(body, original) {
		// A decorated body: find the model again (it was validated when
		// the decorator made it; its "model" member is the runner's).
		start, end = -1, -1
		jsontop.Walk(body, func(key []byte, s, e int) bool {
			if jsontop.KeyEquals(key, "model") {
				start, end = s, e
				return false
			}
			return true
		})
		if start < 0 || body[start] != '"' || decodeString(body[start:end]) != info.Model {
			return nil, fmt.Errorf("the decorated request lost its model %q", info.Model)
		}
	}
	return [][]byte{body[:start], jsontop.AppendString(nil, info.Upstream), body[end:]}, nil
}

func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
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
