package anthropic

import (
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// blockDelta is a content_block_delta event as the assembler reads it:
// the block's index, the delta's type and the text of the delta's member
// that type names ("" for a type the assembler does not keep).
type blockDelta struct {
	Index int
	Kind  string
	Text  string
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

// fastEvent reads a valid event (jsontop.Valid) with the byte scanner as
// Observe would through json.Unmarshal into asmEvent: a text delta, an
// event that changes nothing, or fallBack for the rest (the events that
// start a message or block or end it, which come once per stream or
// block, and any unusual shape). A stream is hundreds of deltas, and the
// reflection decoder cost more than relaying them.
func fastEvent(data []byte) (d blockDelta, res fastResult) {
	var typ, delta []byte
	ok := wire.StructMembers(data, 0, asmEventKeys, func(k int, v []byte) bool {
		switch k {
		case 0: // type
			typ = v
			return v[0] == '"' || v[0] == 'n'
		case 1: // index
			return wire.DecodeInt(v, &d.Index)
		case 2: // delta
			delta = v
		}
		// delta, message, content_block and usage decode into maps:
		// an object or null.
		return v[0] == '{' || v[0] == 'n'
	})
	if !ok {
		return blockDelta{}, fallBack
	}
	switch t := stringOrEmpty(typ); t {
	case "content_block_delta":
	case "message_start", "content_block_start", "message_delta":
		return blockDelta{}, fallBack
	default:
		return blockDelta{}, isOther
	}
	if len(delta) == 0 || delta[0] != '{' {
		return d, isDelta // no delta: no type, nothing kept
	}
	// The delta is decoded into a map: every key counts, exactly as
	// written, and the last of a repeated key wins.
	var kind, text, partial, thinking, signature []byte
	plain := true
	jsontop.Object(delta, 0, func(raw []byte, start, end int) bool {
		if plain = wire.PlainKey(raw); !plain {
			return false
		}
		v := delta[start:end]
		switch string(raw) {
		case "type":
			kind = v
		case "text":
			text = v
		case "partial_json":
			partial = v
		case "thinking":
			thinking = v
		case "signature":
			signature = v
		}
		return true
	})
	if !plain {
		return blockDelta{}, fallBack
	}
	d.Kind = stringOrEmpty(kind)
	switch deltaMember(d.Kind) {
	case "text":
		d.Text = stringOrEmpty(text)
	case "partial_json":
		d.Text = stringOrEmpty(partial)
	case "thinking":
		d.Text = stringOrEmpty(thinking)
	case "signature":
		d.Text = stringOrEmpty(signature)
	}
	return d, isDelta
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
