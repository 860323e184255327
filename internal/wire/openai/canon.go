package openai

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/wire"
)

// canonMessage is the identity of a message for continuity keys: role, the
// content reduced to merged text and other parts, tool calls with canonical
// arguments, and the tool_call_id of a tool result.
type canonMessage struct {
	Role    string      `json:"r"`
	Content []any       `json:"c,omitempty"`
	Calls   []canonCall `json:"t,omitempty"`
	CallID  string      `json:"i,omitempty"`
}

type canonCall struct {
	ID   string `json:"id"`
	Name string `json:"n"`
	Args string `json:"a"`
}

// Canonical implements wire.ToolLoop.
func (Format) Canonical(msg json.RawMessage) (wire.Canon, error) {
	var m struct {
		Role         string          `json:"role"`
		Content      json.RawMessage `json:"content"`
		ToolCalls    []wireCall      `json:"tool_calls"`
		ToolCallID   string          `json:"tool_call_id"`
		FunctionCall *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function_call"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return wire.Canon{}, fmt.Errorf("%w: message: %v", wire.ErrMalformed, err)
	}
	role := wire.RoleOther
	switch m.Role {
	case "system", "developer":
		return wire.Canon{Role: wire.RoleSystem}, nil
	case "user":
		role = wire.RoleUser
	case "assistant":
		role = wire.RoleAssistant
	case "tool", "function":
		role = wire.RoleTool
	}
	c := canonMessage{Role: m.Role, Content: canonContent(m.Content), CallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		c.Calls = append(c.Calls, canonCall{tc.ID, tc.Function.Name, canonArgs(tc.Function.Arguments)})
	}
	if m.FunctionCall != nil {
		c.Calls = append(c.Calls, canonCall{"", m.FunctionCall.Name, canonArgs(m.FunctionCall.Arguments)})
	}
	b, err := wire.MarshalCanonical(c)
	return wire.Canon{Role: role, Bytes: b}, err
}

// canonContent merges adjacent text parts; a string, null and "" are the
// same as the equivalent parts.
func canonContent(raw json.RawMessage) []any {
	if s, ok := wire.String(raw); ok {
		return wire.TrimTexts([]any{s})
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return []any{string(raw)}
	}
	var out []any
	for _, p := range parts {
		var tp struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal(p, &tp)
		if tp.Type == "text" {
			if tp.Text == "" {
				continue
			}
			if n := len(out); n > 0 {
				if prev, ok := out[n-1].(string); ok {
					out[n-1] = prev + tp.Text
					continue
				}
			}
			out = append(out, tp.Text)
			continue
		}
		if cp, err := wire.CanonicalJSON(p); err == nil {
			out = append(out, json.RawMessage(cp))
		}
	}
	return wire.TrimTexts(out)
}

// canonArgs canonicalises an arguments string holding JSON; other text is
// kept as is.
func canonArgs(raw json.RawMessage) string {
	s, ok := wire.String(raw)
	if !ok {
		s = string(raw)
	}
	if c, err := wire.CanonicalJSON([]byte(s)); err == nil {
		return string(c)
	}
	return s
}
