package openai

import (
	"encoding/json"
	"strconv"

	"github.com/clawdapus/clawgo/internal/jsontop"
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

// fastChunk decodes a valid chunk; false: leave it to encoding/json.
func fastChunk(data []byte, c *asmChunk) bool {
	var seen uint
	return members(data, 0, &seen, func(key string, v []byte) bool {
		switch key {
		case "id":
			return str(v, &c.ID)
		case "model":
			return str(v, &c.Model)
		case "system_fingerprint":
			return str(v, &c.Fingerprint)
		case "created":
			return integer(v, &c.Created)
		case "usage":
			c.Usage = v
			return true
		case "choices":
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
		return true
	}, "id", "model", "system_fingerprint", "created", "usage", "choices")
}

func fastChoice(v []byte, ch *asmChunkChoice) bool {
	if v[0] != '{' {
		return false
	}
	var seen uint
	return members(v, 0, &seen, func(key string, v []byte) bool {
		switch key {
		case "index":
			var n int64
			if !integer(v, &n) || n != int64(int(n)) {
				return false
			}
			ch.Index = int(n)
			return true
		case "finish_reason":
			return strPtr(v, &ch.FinishReason)
		case "delta":
			if string(v) == "null" {
				return true
			}
			if v[0] != '{' {
				return false
			}
			var dseen uint
			return members(v, 0, &dseen, func(key string, v []byte) bool {
				d := &ch.Delta
				switch key {
				case "role":
					return str(v, &d.Role)
				case "content":
					return strPtr(v, &d.Content)
				case "refusal":
					return strPtr(v, &d.Refusal)
				case "reasoning_content":
					return strPtr(v, &d.ReasoningContent)
				}
				return false // tool_calls: encoding/json
			}, "role", "content", "refusal", "reasoning_content", "tool_calls")
		}
		return true
	}, "index", "finish_reason", "delta")
}

// members calls fn for each member of the object at b[i] whose key is one
// of known; it returns false when fn does, and when a key appears twice,
// differs from a known key in case only, or is escaped or non-ASCII
// (encoding/json's rules for those are left to it).
func members(b []byte, i int, seen *uint, fn func(key string, v []byte) bool, known ...string) bool {
	ok := true
	jsontop.Object(b, i, func(raw []byte, start, end int) bool {
		// Keys with escapes or non-ASCII bytes are left to encoding/json.
		for _, c := range raw {
			if c == '\\' || c >= 0x80 {
				ok = false
				return false
			}
		}
		for k, name := range known {
			if string(raw) == name {
				if *seen&(1<<k) != 0 {
					ok = false
					return false
				}
				*seen |= 1 << k
				ok = fn(name, b[start:end])
				return ok
			}
			if equalFoldASCII(raw, name) {
				ok = false
				return false
			}
		}
		return true
	})
	return ok
}

// equalFoldASCII is a case-insensitive comparison of an ASCII key.
func equalFoldASCII(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x := a[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != b[i] {
			return false
		}
	}
	return true
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
