package responses

import (
	"bytes"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// InjectFeeds implements wire.FeedInjector: one message item with the feed
// text is inserted into "input" right after its leading system/developer
// messages, taking the role of the last of them, or "developer". The
// runner's instructions and leading items stay first and byte-identical,
// so providers' prefix caches keep hitting (internal/feeds has the whole
// rationale). A string input becomes the feed item and one user message.
func (Format) InjectFeeds(body []byte, text string) ([]byte, bool) {
	obj := jsontop.SkipSpace(body, 0)
	in, ok := jsontop.LastMember(body, obj, inputKey)
	if !ok {
		return nil, false
	}
	var item bytes.Buffer
	item.Grow(len(text) + 64)
	writeItem := func(role, content string) {
		item.WriteString(`{"role":`)
		jsontop.WriteJSONString(&item, role)
		item.WriteString(`,"content":`)
		jsontop.WriteJSONString(&item, content)
		item.WriteByte('}')
	}
	switch body[in.Start] {
	case '"':
		user, ok := jsontop.StringValue(body[in.Start:in.End])
		if !ok {
			return nil, false
		}
		item.WriteByte('[')
		writeItem("developer", text)
		item.WriteByte(',')
		writeItem("user", user)
		item.WriteByte(']')
		return jsontop.Splice(body, in.Start, in.End, item.Bytes()), true
	case '[':
	default:
		return nil, false
	}
	at, role, lead := in.Start+1, "developer", 0
	for start, end := range jsontop.Elements(body, in.Start) {
		r := leadingRole(body[start:end])
		if r == "" {
			break
		}
		at, role, lead = end, r, lead+1
	}
	if lead > 0 {
		item.WriteByte(',')
	}
	writeItem(role, text)
	if lead == 0 && !jsontop.Empty(body, in.Start) {
		item.WriteByte(',')
	}
	return jsontop.Splice(body, at, at, item.Bytes()), true
}

// leadingRole is the role of a system or developer message item, else "".
func leadingRole(it []byte) string {
	if len(it) == 0 || it[0] != '{' {
		return ""
	}
	if t, ok := jsontop.LastMember(it, 0, "type"); ok {
		if typ, _ := jsontop.StringValue(it[t.Start:t.End]); typ != "message" {
			return ""
		}
	}
	m, ok := jsontop.LastMember(it, 0, "role")
	if !ok {
		return ""
	}
	r, _ := jsontop.StringValue(it[m.Start:m.End])
	if r != "system" && r != "developer" {
		return ""
	}
	return r
}
