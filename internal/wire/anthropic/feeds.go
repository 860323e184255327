package anthropic

import (
	"bytes"
	"strings"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// InjectFeeds implements wire.FeedInjector: the feed text goes into
// "system". Absent, null or blank becomes the text as a string; a string
// becomes [runner's text block, feed block]; an array gets the feed block
// appended, after every runner cache_control breakpoint. Any other
// "system" is left for the provider to reject.
func (Format) InjectFeeds(body []byte, text string) ([]byte, bool) {
	obj := jsontop.SkipSpace(body, 0)
	sys, ok := wire.LastMember(body, obj, "system")
	var out bytes.Buffer
	out.Grow(len(text) + 64)
	if !ok {
		out.WriteString(`"system":`)
		wire.WriteJSONString(&out, text)
		if !jsontop.Empty(body, obj) {
			out.WriteByte(',')
		}
		return wire.Splice(body, obj+1, obj+1, out.Bytes()), true
	}
	v := body[sys.Start:sys.End]
	switch v[0] {
	case 'n': // null
		wire.WriteJSONString(&out, text)
		return wire.Splice(body, sys.Start, sys.End, out.Bytes()), true
	case '"':
		s, _ := wire.StringValue(v)
		if strings.TrimSpace(s) == "" {
			// The provider rejects blank text blocks; there is nothing
			// of the runner's to keep.
			wire.WriteJSONString(&out, text)
			return wire.Splice(body, sys.Start, sys.End, out.Bytes()), true
		}
		out.WriteString(`[{"type":"text","text":`)
		out.Write(v) // the runner's string, byte for byte
		out.WriteString(`},`)
		writeTextBlock(&out, text)
		out.WriteByte(']')
		return wire.Splice(body, sys.Start, sys.End, out.Bytes()), true
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
		return wire.Splice(body, at, at, out.Bytes()), true
	}
	return nil, false
}

func writeTextBlock(b *bytes.Buffer, text string) {
	b.WriteString(`{"type":"text","text":`)
	wire.WriteJSONString(b, text)
	b.WriteByte('}')
}
