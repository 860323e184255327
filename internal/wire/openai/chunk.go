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
		case 0:
			return wire.DecodeString(v, &c.ID)
		case 1:
			return wire.DecodeString(v, &c.Model)
		case 2:
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
			for start, end := range jsontop.Elements(v, 0) {
				var ch asmChunkChoice
				if !fastChoice(v[start:end], &ch) {
					return false
				}
				c.Choices = append(c.Choices, ch)
			}
			return true
		}
	})
}

func fastChoice(v []byte, ch *asmChunkChoice) bool {
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
				return wire.DecodeStringPtr(v, &d.Content)
			case 2:
				return wire.DecodeStringPtr(v, &d.Refusal)
			case 3:
				return wire.DecodeStringPtr(v, &d.ReasoningContent)
			}
			return false // tool_calls: encoding/json
		})
	})
}
