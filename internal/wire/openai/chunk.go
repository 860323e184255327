package openai

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// decodeChunk decodes a chat.completion.chunk into c exactly as
// json.Unmarshal would, reporting false where json.Unmarshal fails. A
// stream is hundreds of small chunks, each decoded for history; the
// reflection decoder cost more than the rest of relaying them. The common
// shapes are read in one pass that checks the chunk as it goes;
// anything else (a duplicate or case-variant key, an unexpected type, tool
// calls, a chunk that is not valid) goes to encoding/json.
func decodeChunk(data []byte, c *asmChunk) bool {
	if end, ok := scanChunk(data, jsontop.SkipSpace(data, 0), c); ok && jsontop.SkipSpace(data, end) == len(data) {
		return true
	}
	if !jsontop.Valid(data) {
		return false
	}
	*c = asmChunk{}
	return json.Unmarshal(data, c) == nil
}

// The keys scanChunk and scanChoice read, in jsontop.ValidMembers order.
var (
	chunkKeys  = []string{"id", "model", "system_fingerprint", "created", "usage", "choices"}
	choiceKeys = []string{"index", "finish_reason", "delta"}
	deltaKeys  = []string{"role", "content", "refusal", "reasoning_content", "tool_calls"}
)

// member checks the value at b[start] (depth objects and arrays deep) and
// returns it.
func member(b []byte, start, depth int) (v []byte, end int, ok bool) {
	end, ok = jsontop.ValidValue(b, start, depth)
	if !ok {
		return nil, end, false
	}
	return b[start:end], end, true
}

// scanChunk decodes the chunk object at data[i] in one pass; false: leave
// it to encoding/json.
func scanChunk(b []byte, i int, c *asmChunk) (int, bool) {
	return jsontop.ValidMembers(b, i, 1, chunkKeys, func(k, s int) (int, bool) {
		if k == 5 { // choices: walked element by element, once
			return scanChoices(b, s, c)
		}
		v, end, ok := member(b, s, 1)
		if !ok {
			return end, false
		}
		switch k {
		case 0, 1, 2:
			if c.skipMeta { // a string or null, as decoding it would require
				return end, v[0] == '"' || v[0] == 'n'
			}
			switch k {
			case 0:
				return end, jsontop.DecodeString(v, &c.ID)
			case 1:
				return end, jsontop.DecodeString(v, &c.Model)
			}
			return end, jsontop.DecodeString(v, &c.Fingerprint)
		case 3:
			return end, jsontop.DecodeInt64(v, &c.Created)
		}
		c.Usage = v // usage: kept as it is
		return end, true
	})
}

// scanChoices decodes the choices array (or null) at b[s].
func scanChoices(b []byte, s int, c *asmChunk) (int, bool) {
	if s >= len(b) {
		return s, false
	}
	if b[s] == 'n' {
		_, end, ok := member(b, s, 1)
		c.Choices = nil
		return end, ok
	}
	if c.Choices == nil {
		c.Choices = make([]asmChunkChoice, 0, 1)
	}
	c.Choices = c.Choices[:0] // a caller's reused slice
	return jsontop.ValidArray(b, s, func(i int) (int, bool) {
		c.Choices = append(c.Choices, asmChunkChoice{})
		return scanChoice(b, i, &c.Choices[len(c.Choices)-1], c.literals)
	})
}

// scanChoice decodes one choice object at b[i], an element of choices.
func scanChoice(b []byte, i int, ch *asmChunkChoice, literals bool) (int, bool) {
	return jsontop.ValidMembers(b, i, 3, choiceKeys, func(k, s int) (int, bool) {
		if k == 2 && s < len(b) && b[s] == '{' { // delta
			return scanDelta(b, s, &ch.Delta, literals)
		}
		v, end, ok := member(b, s, 3)
		if !ok {
			return end, false
		}
		switch k {
		case 0:
			return end, jsontop.DecodeInt(v, &ch.Index)
		case 1:
			return end, jsontop.DecodeStringPtr(v, &ch.FinishReason)
		}
		return end, v[0] == 'n' // a null delta leaves it as it is
	})
}

// scanDelta decodes a choice's delta object at b[i].
func scanDelta(b []byte, i int, d *asmDelta, literals bool) (int, bool) {
	return jsontop.ValidMembers(b, i, 4, deltaKeys, func(k, s int) (int, bool) {
		v, end, ok := member(b, s, 4)
		if !ok {
			return end, false
		}
		switch k {
		case 0:
			return end, jsontop.DecodeString(v, &d.Role)
		case 1:
			return end, text(v, &d.Content, &d.contentLit, literals)
		case 2:
			return end, text(v, &d.Refusal, &d.refusalLit, literals)
		case 3:
			return end, text(v, &d.ReasoningContent, &d.reasoningLit, literals)
		}
		return end, false // tool_calls: encoding/json
	})
}

// text decodes a delta's text, a string or null, into s; with literals, a
// string is kept as its literal in lit instead.
func text(v []byte, s **string, lit *[]byte, literals bool) bool {
	if literals && v[0] == '"' {
		*lit = v
		return true
	}
	return jsontop.DecodeStringPtr(v, s)
}
