package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/wire"
)

// canonMessage is a message's identity for continuity keys: the role and
// the content blocks with adjacent text merged, thinking dropped (runners
// often strip it) and cache_control / citations ignored (runners move cache
// breakpoints between turns).
type canonMessage struct {
	Role    string `json:"r"`
	Content []any  `json:"c,omitempty"`
}

type canonUse struct {
	ID    string          `json:"id"`
	Name  string          `json:"n"`
	Input json.RawMessage `json:"a"`
}

type canonResult struct {
	ID      string `json:"rid"`
	Content []any  `json:"c,omitempty"`
	IsError bool   `json:"e,omitempty"`
}

// Canonical implements wire.ToolLoop.
func (Format) Canonical(msg json.RawMessage) (wire.Canon, error) {
	var m struct {
		Role    string        `json:"role"`
		Content wire.Borrowed `json:"content"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return wire.Canon{}, fmt.Errorf("%w: message: %v", wire.ErrMalformed, err)
	}
	role := wire.RoleOther
	switch m.Role {
	case "user":
		role = wire.RoleUser
	case "assistant":
		role = wire.RoleAssistant
	case "system":
		return wire.Canon{Role: wire.RoleSystem}, nil
	}
	blocks := canonBlocks(json.RawMessage(m.Content))
	b, err := wire.MarshalCanonical(canonMessage{Role: m.Role, Content: blocks})
	canon := wire.Canon{Role: role, Bytes: b}
	if role == wire.RoleAssistant {
		for _, bl := range blocks {
			if u, ok := bl.(canonUse); ok {
				canon.Calls = append(canon.Calls, u.Name)
			}
		}
	}
	return canon, err
}

func canonBlocks(raw json.RawMessage) []any {
	if s, ok := wire.String(raw); ok {
		return wire.TrimTexts([]any{s})
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return []any{string(raw)}
	}
	var out []any
	addText := func(t string) {
		if t == "" {
			return
		}
		if n := len(out); n > 0 {
			if prev, ok := out[n-1].(string); ok {
				out[n-1] = prev + t
				return
			}
		}
		out = append(out, t)
	}
	for _, rb := range blocks {
		var b struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(rb, &b) != nil {
			continue
		}
		switch b.Type {
		case "text":
			addText(b.Text)
		case "thinking", "redacted_thinking":
		case "tool_use":
			in, err := wire.CanonicalJSON(b.Input)
			if err != nil {
				in = []byte("{}")
			}
			out = append(out, canonUse{b.ID, b.Name, in})
		case "tool_result":
			out = append(out, canonResult{b.ToolUseID, canonBlocks(b.Content), b.IsError})
		default:
			out = append(out, canonOther(rb))
		}
	}
	return wire.TrimTexts(out)
}

// canonOther is a block of another type without cache_control.
func canonOther(raw json.RawMessage) any {
	obj, err := wire.DecodeObject(raw)
	if err != nil {
		return string(raw)
	}
	delete(obj, "cache_control")
	b, _ := json.Marshal(obj)
	c, err := wire.CanonicalJSON(b)
	if err != nil {
		return string(raw)
	}
	return json.RawMessage(c)
}
