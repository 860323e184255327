package responses

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// asmEvent is the part of a stream event the assembler reads.
type asmEvent struct {
	Type     string          `json:"type"`
	Response json.RawMessage `json:"response"`
	Item     json.RawMessage `json:"item"`
}

var asmEventKeys = []string{"type", "response", "item"}

// decodeEvent decodes data into ev exactly as json.Unmarshal would,
// reporting false where it fails, except that Response and Item may be
// slices of data rather than copies. The events it reads carry a whole
// response or item, its text once more: the byte scanner validates and
// splits them several times faster than the reflection decoder.
func decodeEvent(data []byte, ev *asmEvent) bool {
	if !jsontop.Valid(data) {
		return false
	}
	if fastEvent(data, ev) {
		return true
	}
	*ev = asmEvent{}
	return json.Unmarshal(data, ev) == nil
}

// fastEvent decodes a valid event object with the byte scanner; false
// leaves it to encoding/json (not an object, a repeated, case-variant or
// escaped key, a type that is not a string).
func fastEvent(data []byte, ev *asmEvent) bool {
	var e asmEvent
	i := jsontop.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	ok := wire.StructMembers(data, i, asmEventKeys, func(k int, v []byte) bool {
		switch k {
		case 0:
			if v[0] == 'n' {
				return true
			}
			s, ok := wire.StringValue(v)
			e.Type = s
			return ok
		case 1:
			e.Response = v
		case 2:
			e.Item = v
		}
		return true
	})
	if ok {
		*ev = e
	}
	return ok
}
