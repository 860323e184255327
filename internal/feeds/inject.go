package feeds

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/clawdapus/clawgo/internal/exchange"
)

// inject splices the feed text into body for the given format, returning a
// new slice. ok is false, and body is to be left as is, when body is not a
// JSON object of the format's shape.
func inject(format exchange.Format, body []byte, text string) ([]byte, bool) {
	if !validJSON(body) {
		return nil, false
	}
	i := skipWS(body, 0)
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
	msgs, ok := lastMember(members(body, obj), "messages")
	if !ok || body[msgs.val.start] != '[' {
		return nil, false
	}
	at, role, lead := msgs.val.start+1, "system", 0
	for e := range elements(body, msgs.val.start) {
		r := roleOf(body[e.start:e.end])
		if r != "system" && r != "developer" {
			break
		}
		at, role, lead = e.end, r, lead+1
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
	if lead == 0 && !emptyArray(body, msgs.val.start) {
		msg.WriteByte(',')
	}
	return splice(body, at, at, msg.Bytes()), true
}

func roleOf(msg []byte) string {
	if len(msg) == 0 || msg[0] != '{' {
		return ""
	}
	m, ok := lastMember(members(msg, 0), "role")
	if !ok {
		return ""
	}
	r, _ := stringValue(msg[m.val.start:m.val.end])
	return r
}

// injectAnthropic adds the feed text to "system" (see the package doc):
// absent, null or blank becomes the text as a string; a string becomes
// [runner's text block, feed block]; an array gets the feed block appended.
// Any other "system" is left for the provider to reject.
func injectAnthropic(body []byte, obj int, text string) ([]byte, bool) {
	ms := members(body, obj)
	sys, ok := lastMember(ms, "system")
	var out bytes.Buffer
	out.Grow(len(text) + 64)
	if !ok {
		out.WriteString(`"system":`)
		writeJSONString(&out, text)
		if len(ms) > 0 {
			out.WriteByte(',')
		}
		return splice(body, obj+1, obj+1, out.Bytes()), true
	}
	v := body[sys.val.start:sys.val.end]
	switch v[0] {
	case 'n': // null
		writeJSONString(&out, text)
		return splice(body, sys.val.start, sys.val.end, out.Bytes()), true
	case '"':
		s, _ := stringValue(v)
		if strings.TrimSpace(s) == "" {
			// The provider rejects blank text blocks; there is nothing
			// of the runner's to keep.
			writeJSONString(&out, text)
			return splice(body, sys.val.start, sys.val.end, out.Bytes()), true
		}
		out.WriteString(`[{"type":"text","text":`)
		out.Write(v) // the runner's string, byte for byte
		out.WriteString(`},`)
		writeTextBlock(&out, text)
		out.WriteByte(']')
		return splice(body, sys.val.start, sys.val.end, out.Bytes()), true
	case '[':
		at := sys.val.start + 1
		if !emptyArray(body, sys.val.start) {
			// After the last block: the array's closing bracket,
			// less the white space before it.
			at = sys.val.end - 1
			for isSpace(body[at-1]) {
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
