package responses

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
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
// response or item, its text once more: the byte scanner checks and splits
// them in one pass, several times faster than the reflection decoder.
func decodeEvent(data []byte, ev *asmEvent) bool {
	if fastEvent(data, ev) {
		return true
	}
	if !jsontop.Valid(data) {
		return false
	}
	*ev = asmEvent{}
	return json.Unmarshal(data, ev) == nil
}

// fastEvent decodes an event object with the byte scanner, checking it as
// jsontop.Valid would while it goes; false leaves it to encoding/json (not
// a valid object, a repeated, case-variant or escaped key, a type that is
// not a string).
func fastEvent(data []byte, ev *asmEvent) bool {
	var e asmEvent
	end, ok := jsontop.ValidMembers(data, jsontop.SkipSpace(data, 0), 1, asmEventKeys, func(k, s int) (int, bool) {
		end, ok := jsontop.ValidValue(data, s, 1)
		if !ok {
			return end, false
		}
		v := data[s:end]
		switch k {
		case 0:
			if v[0] == 'n' {
				return end, true
			}
			s, ok := jsontop.StringValue(v)
			e.Type = s
			return end, ok
		case 1:
			e.Response = v
		case 2:
			e.Item = v
		}
		return end, true
	})
	if !ok || jsontop.SkipSpace(data, end) != len(data) {
		return false
	}
	*ev = e
	return true
}
