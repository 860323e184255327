package openai

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// decodeChunk decodes a chat.completion.chunk into c exactly as
// json.Unmarshal would, reporting false where json.Unmarshal fails. A
// stream is hundreds of small chunks, each decoded for history; the
// reflection decoder cost more than the rest of relaying them. The common
// shapes are read with the byte scanner; anything else (a duplicate or
// case-variant key, an unexpected type, tool calls) goes to encoding/json.
func decodeChunk(data []byte, c *asmChunk) bool {
	if !jsontop.Valid(data) {
		return false
	}
	if fastChunk(data, c) {
		return true
	}
	*c = asmChunk{}
	return json.Unmarshal(data, c) == nil
}

// The keys fastChunk and fastChoice read, in wire.StructMembers order.
var (
	chunkKeys  = []string{"id", "model", "system_fingerprint", "created", "usage", "choices"}
	choiceKeys = []string{"index", "finish_reason", "delta"}
	deltaKeys  = []string{"role", "content", "refusal", "reasoning_content", "tool_calls"}
)

// fastChunk decodes a valid chunk; false: leave it to encoding/json.
func fastChunk(data []byte, c *asmChunk) bool {
	return wire.StructMembers(data, 0, chunkKeys, func(k int, v []byte) bool {
		switch k {
		case 0, 1, 2:
			if c.skipMeta { // a string or null, as decoding it would require
				return v[0] == '"' || v[0] == 'n'
			}
			switch k {
			case 0:
				return wire.DecodeString(v, &c.ID)
			case 1:
				return wire.DecodeString(v, &c.Model)
			}
			return wire.DecodeString(v, &c.Fingerprint)
		case 3:
			return wire.DecodeInt64(v, &c.Created)
		case 4:
			c.Usage = v
			return true
		default: // choices
			if string(v) == "null" {
				c.Choices = nil
				return true
			}
			if v[0] != '[' {
				return false
			}
			if c.Choices == nil {
				c.Choices = make([]asmChunkChoice, 0, 1)
			}
			c.Choices = c.Choices[:0] // a caller's reused slice
			// The elements of a valid array, walked without an iterator
			// (its closure would cost an allocation per chunk).
			for i := jsontop.SkipSpace(v, 1); v[i] != ']'; {
				end := jsontop.SkipValue(v, i)
				c.Choices = append(c.Choices, asmChunkChoice{})
				if !fastChoice(v[i:end], &c.Choices[len(c.Choices)-1], c.literals) {
					return false
				}
				if i = jsontop.SkipSpace(v, end); v[i] == ',' {
					i = jsontop.SkipSpace(v, i+1)
				}
			}
			return true
		}
	})
}

func fastChoice(v []byte, ch *asmChunkChoice, literals bool) bool {
	if v[0] != '{' {
		return false
	}
	return wire.StructMembers(v, 0, choiceKeys, func(k int, v []byte) bool {
		switch k {
		case 0:
			return wire.DecodeInt(v, &ch.Index)
		case 1:
			return wire.DecodeStringPtr(v, &ch.FinishReason)
		}
		// delta
		if string(v) == "null" {
			return true
		}
		if v[0] != '{' {
			return false
		}
		d := &ch.Delta
		return wire.StructMembers(v, 0, deltaKeys, func(k int, v []byte) bool {
			switch k {
			case 0:
				return wire.DecodeString(v, &d.Role)
			case 1:
				return text(v, &d.Content, &d.contentLit, literals)
			case 2:
				return text(v, &d.Refusal, &d.refusalLit, literals)
			case 3:
				return text(v, &d.ReasoningContent, &d.reasoningLit, literals)
			}
			return false // tool_calls: encoding/json
		})
	})
}

// text decodes a delta's text, a string or null, into s; with literals, a
// string is kept as its literal in lit instead.
func text(v []byte, s **string, lit *[]byte, literals bool) bool {
	if literals && v[0] == '"' {
		*lit = v
		return true
	}
	return wire.DecodeStringPtr(v, s)
}
