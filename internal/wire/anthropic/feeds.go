package anthropic

import (
	"bytes"
	"strings"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// InjectFeeds implements wire.FeedInjector: the feed text goes into
// "system". Absent, null or blank becomes the text as a string; a string
// becomes [runner's text block, feed block]; an array gets the feed block
// appended, after every runner cache_control breakpoint. Any other
// "system" is left for the provider to reject.
func (Format) InjectFeeds(body []byte, text string) ([]byte, bool) {
	obj := jsontop.SkipSpace(body, 0)
	sys, ok := jsontop.LastMember(body, obj, "system")
	var out bytes.Buffer
	out.Grow(len(text) + 64)
	if !ok {
		out.WriteString(`"system":`)
		jsontop.WriteJSONString(&out, text)
		if !jsontop.Empty(body, obj) {
			out.WriteByte(',')
		}
		return jsontop.Splice(body, obj+1, obj+1, out.Bytes()), true
	}
	v := body[sys.Start:sys.End]
	switch v[0] {
	case 'n': // null
		jsontop.WriteJSONString(&out, text)
		return jsontop.Splice(body, sys.Start, sys.End, out.Bytes()), true
	case '"':
		s, _ := jsontop.StringValue(v)
		if strings.TrimSpace(s) == "" {
			// The provider rejects blank text blocks; there is nothing
			// of the runner's to keep.
			jsontop.WriteJSONString(&out, text)
			return jsontop.Splice(body, sys.Start, sys.End, out.Bytes()), true
		}
		out.WriteString(`[{"type":"text","text":`)
		out.Write(v) // the runner's string, byte for byte
		out.WriteString(`},`)
		writeTextBlock(&out, text)
		out.WriteByte(']')
		return jsontop.Splice(body, sys.Start, sys.End, out.Bytes()), true
	case '[':
		at := sys.Start + 1
		if !jsontop.Empty(body, sys.Start) {
			// After the last block: the array's closing bracket,
			// less the white space before it.
			at = sys.End - 1
			for jsontop.IsSpace(body[at-1]) {
				at--
			}
			out.WriteByte(',')
		}
		writeTextBlock(&out, text)
		return jsontop.Splice(body, at, at, out.Bytes()), true
	}
	return nil, false
}

func writeTextBlock(b *bytes.Buffer, text string) {
	b.WriteString(`{"type":"text","text":`)
	jsontop.WriteJSONString(b, text)
	b.WriteByte('}')
}
