package anthropic

import (
	"github.com/clawdapus/clawgo/internal/jsontop"
)

// blockDelta is a content_block_delta event as the assembler reads it:
// the block's index, the delta's type and the text of the delta's member
// that type names ("" for a type the assembler does not keep).
type blockDelta struct {
	Index int
	Kind  string
	Text  string
	// Lit, from the fast path, is the text as its JSON string literal, in
	// place of Text: the assembler appends it without a string between.
	Lit []byte
}

// deltaMember is the member of a delta of type kind that carries its text.
func deltaMember(kind string) string {
	switch kind {
	case "text_delta":
		return "text"
	case "input_json_delta":
		return "partial_json"
	case "thinking_delta":
		return "thinking"
	case "signature_delta":
		return "signature"
	}
	return ""
}

// fastResult is what fastEvent made of an event.
type fastResult int

const (
	// fallBack: the event is for encoding/json (asmEvent).
	fallBack fastResult = iota
	// isDelta: the event is a content_block_delta, read into blockDelta.
	isDelta
	// isOther: the event changes nothing in the assembly (ping,
	// content_block_stop, message_stop, an unknown type).
	isOther
)

// asmEventKeys are asmEvent's members, in the order fastEvent numbers them.
var asmEventKeys = []string{"type", "index", "delta", "message", "content_block", "usage"}

// fastEvent reads an event with the byte scanner, in one pass that
// checks it as jsontop.Valid would, as Observe would through json.Unmarshal
// into asmEvent: a text delta, an event that changes nothing, or fallBack
// for the rest (the events that start a message or block or end it, which
// come once per stream or block, any unusual shape, and an event that is
// not valid JSON). A stream is hundreds of deltas, and the reflection
// decoder cost more than relaying them.
func fastEvent(data []byte) (d blockDelta, res fastResult) {
	var typ []byte
	var dm deltaMembers
	hasDelta := false
	end, ok := jsontop.ValidMembers(data, 0, 1, asmEventKeys, func(k, s int) (int, bool) {
		if k == 2 && s < len(data) && data[s] == '{' { // delta: walked once
			hasDelta = true
			return dm.scan(data, s)
		}
		end, ok := jsontop.ValidValue(data, s, 1)
		if !ok {
			return end, false
		}
		v := data[s:end]
		switch k {
		case 0: // type
			typ = v
			return end, v[0] == '"' || v[0] == 'n'
		case 1: // index
			return end, jsontop.DecodeInt(v, &d.Index)
		}
		// delta (null here), message, content_block and usage decode
		// into maps: an object or null.
		return end, v[0] == '{' || v[0] == 'n'
	})
	if !ok || jsontop.SkipSpace(data, end) != len(data) {
		return blockDelta{}, fallBack
	}
	switch t := stringOrEmpty(typ); t {
	case "content_block_delta":
	case "message_start", "content_block_start", "message_delta":
		return blockDelta{}, fallBack
	default:
		return blockDelta{}, isOther
	}
	if !hasDelta {
		return d, isDelta // no delta: no type, nothing kept
	}
	d.Kind = stringOrEmpty(dm.kind)
	var lit []byte
	switch deltaMember(d.Kind) {
	case "text":
		lit = dm.text
	case "partial_json":
		lit = dm.partial
	case "thinking":
		lit = dm.thinking
	case "signature":
		lit = dm.signature
	}
	if len(lit) > 0 && lit[0] == '"' { // any other value reads as ""
		d.Lit = lit
	}
	return d, isDelta
}

// deltaMembers are the members of a delta the assembler reads.
type deltaMembers struct{ kind, text, partial, thinking, signature []byte }

// scan reads the delta object at b[i]. It is decoded into a map: every key
// counts, exactly as written, and the last of a repeated key wins; a key
// that is escaped or not ASCII leaves the event to encoding/json.
func (dm *deltaMembers) scan(b []byte, i int) (int, bool) {
	return jsontop.ValidObject(b, i, func(raw []byte, s int) (int, bool) {
		if !jsontop.PlainKey(raw) {
			return s, false
		}
		end, ok := jsontop.ValidValue(b, s, 2)
		if !ok {
			return end, false
		}
		v := b[s:end]
		switch string(raw) {
		case "type":
			dm.kind = v
		case "text":
			dm.text = v
		case "partial_json":
			dm.partial = v
		case "thinking":
			dm.thinking = v
		case "signature":
			dm.signature = v
		}
		return end, true
	})
}

// stringOrEmpty is a valid value decoded into a string as the assembler
// does, ignoring the error: a string's text, else "".
func stringOrEmpty(v []byte) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, _ := jsontop.Unquote(v)
	return s
}
