package feeds

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/jsontop"
)

// inject splices the feed text into body for the given format, returning a
// new slice. ok is false, and body is to be left as is, when body is not a
// JSON object of the format's shape.
func inject(format exchange.Format, body []byte, text string) ([]byte, bool) {
	if !jsontop.Valid(body) {
		return nil, false
	}
	i := jsontop.SkipSpace(body, 0)
	if body[i] != '{' {
		return nil, false
	}
	switch format {
	case exchange.OpenAI:
		return injectOpenAI(body, i, text)
	case exchange.Anthropic:
		return injectAnthropic(body, i, text)
	}
	return nil, false
}

// injectOpenAI inserts one message with the feed text right after the leading
// system/developer messages of "messages" (see the package doc for why),
// taking the role of the last of them, or "system".
func injectOpenAI(body []byte, obj int, text string) ([]byte, bool) {
	msgs, ok := lastMember(body, obj, "messages")
	if !ok || body[msgs.start] != '[' {
		return nil, false
	}
	at, role, lead := msgs.start+1, "system", 0
	for start, end := range jsontop.Elements(body, msgs.start) {
		r := roleOf(body[start:end])
		if r != "system" && r != "developer" {
			break
		}
		at, role, lead = end, r, lead+1
	}
	var msg bytes.Buffer
	msg.Grow(len(text) + 64)
	if lead > 0 {
		msg.WriteByte(',')
	}
	msg.WriteString(`{"role":`)
	writeJSONString(&msg, role)
	msg.WriteString(`,"content":`)
	writeJSONString(&msg, text)
	msg.WriteByte('}')
	if lead == 0 && !jsontop.Empty(body, msgs.start) {
		msg.WriteByte(',')
	}
	return splice(body, at, at, msg.Bytes()), true
}

func roleOf(msg []byte) string {
	if len(msg) == 0 || msg[0] != '{' {
		return ""
	}
	m, ok := lastMember(msg, 0, "role")
	if !ok {
		return ""
	}
	r, _ := stringValue(msg[m.start:m.end])
	return r
}

// span is the byte range [start, end) of one JSON value in a document.
type span struct{ start, end int }

// lastMember returns the span of the value of the last member named key
// of the object starting at b[obj]: duplicate keys resolve to the last one
// in encoding/json and in the providers' parsers alike. b has been checked
// by jsontop.Valid.
func lastMember(b []byte, obj int, key string) (v span, ok bool) {
	jsontop.Object(b, obj, func(k []byte, start, end int) bool {
		if jsontop.KeyEquals(k, key) {
			v, ok = span{start, end}, true
		}
		return true
	})
	return v, ok
}

// stringValue decodes v when it is a JSON string.
func stringValue(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, err := jsontop.Unquote(v)
	if err != nil {
		return "", false
	}
	return s, true
}

// injectAnthropic adds the feed text to "system" (see the package doc):
// absent, null or blank becomes the text as a string; a string becomes
// [runner's text block, feed block]; an array gets the feed block appended.
// Any other "system" is left for the provider to reject.
func injectAnthropic(body []byte, obj int, text string) ([]byte, bool) {
	sys, ok := lastMember(body, obj, "system")
	var out bytes.Buffer
	out.Grow(len(text) + 64)
	if !ok {
		out.WriteString(`"system":`)
		writeJSONString(&out, text)
		if !jsontop.Empty(body, obj) {
			out.WriteByte(',')
		}
		return splice(body, obj+1, obj+1, out.Bytes()), true
	}
	v := body[sys.start:sys.end]
	switch v[0] {
	case 'n': // null
		writeJSONString(&out, text)
		return splice(body, sys.start, sys.end, out.Bytes()), true
	case '"':
		s, _ := stringValue(v)
		if strings.TrimSpace(s) == "" {
			// The provider rejects blank text blocks; there is nothing
			// of the runner's to keep.
			writeJSONString(&out, text)
			return splice(body, sys.start, sys.end, out.Bytes()), true
		}
		out.WriteString(`[{"type":"text","text":`)
		out.Write(v) // the runner's string, byte for byte
		out.WriteString(`},`)
		writeTextBlock(&out, text)
		out.WriteByte(']')
		return splice(body, sys.start, sys.end, out.Bytes()), true
	case '[':
		at := sys.start + 1
		if !jsontop.Empty(body, sys.start) {
			// After the last block: the array's closing bracket,
			// less the white space before it.
			at = sys.end - 1
			for jsontop.IsSpace(body[at-1]) {
				at--
			}
			out.WriteByte(',')
		}
		writeTextBlock(&out, text)
		return splice(body, at, at, out.Bytes()), true
	}
	return nil, false
}

func writeTextBlock(b *bytes.Buffer, text string) {
	b.WriteString(`{"type":"text","text":`)
	writeJSONString(b, text)
	b.WriteByte('}')
}

// writeJSONString writes s as a JSON string without HTML escaping (feed
// markdown is full of <, > and &; escaping them only costs tokens).
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// splice returns a new slice: body with body[from:to] replaced by ins.
func splice(body []byte, from, to int, ins []byte) []byte {
	out := make([]byte, 0, len(body)-(to-from)+len(ins))
	out = append(out, body[:from]...)
	out = append(out, ins...)
	return append(out, body[to:]...)
}
