package openai

import (
	"bytes"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// InjectFeeds implements wire.FeedInjector: one message with the feed text
// is inserted right after the leading system/developer messages of
// "messages", taking the role of the last of them, or "system" (the
// runner's prompt stays first and byte-identical, so providers' prefix
// caches keep hitting; internal/feeds has the whole rationale).
func (Format) InjectFeeds(body []byte, text string) ([]byte, bool) {
	obj := jsontop.SkipSpace(body, 0)
	msgs, ok := jsontop.LastMember(body, obj, "messages")
	if !ok || body[msgs.Start] != '[' {
		return nil, false
	}
	at, role, lead := msgs.Start+1, "system", 0
	for start, end := range jsontop.Elements(body, msgs.Start) {
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
	jsontop.WriteJSONString(&msg, role)
	msg.WriteString(`,"content":`)
	jsontop.WriteJSONString(&msg, text)
	msg.WriteByte('}')
	if lead == 0 && !jsontop.Empty(body, msgs.Start) {
		msg.WriteByte(',')
	}
	return jsontop.Splice(body, at, at, msg.Bytes()), true
}

func roleOf(msg []byte) string {
	if len(msg) == 0 || msg[0] != '{' {
		return ""
	}
	m, ok := jsontop.LastMember(msg, 0, "role")
	if !ok {
		return ""
	}
	r, _ := jsontop.StringValue(msg[m.Start:m.End])
	return r
}
