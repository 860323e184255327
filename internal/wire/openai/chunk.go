package openai

import (
	"encoding/json"
	"strconv"

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
			return str(v, &c.ID)
		case 1:
			return str(v, &c.Model)
		case 2:
			return str(v, &c.Fingerprint)
		case 3:
			return integer(v, &c.Created)
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
			var n int64
			if !integer(v, &n) || n != int64(int(n)) {
				return false
			}
			ch.Index = int(n)
			return true
		case 1:
			return strPtr(v, &ch.FinishReason)
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
				return str(v, &d.Role)
			case 1:
				return strPtr(v, &d.Content)
			case 2:
				return strPtr(v, &d.Refusal)
			case 3:
				return strPtr(v, &d.ReasoningContent)
			}
			return false // tool_calls: encoding/json
		})
	})
}

// str decodes a string into s; null leaves s as it is.
func str(v []byte, s *string) bool {
	switch v[0] {
	case 'n':
		return true
	case '"':
		u, err := jsontop.Unquote(v)
		*s = u
		return err == nil
	}
	return false
}

// strPtr decodes a string or null into p.
func strPtr(v []byte, p **string) bool {
	switch v[0] {
	case 'n':
		*p = nil
		return true
	case '"':
		u, err := jsontop.Unquote(v)
		*p = &u
		return err == nil
	}
	return false
}

// integer decodes a plain integer into n; null leaves n as it is.
func integer(v []byte, n *int64) bool {
	if v[0] == 'n' {
		return true
	}
	x, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false
	}
	*n = x
	return true
}
