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
		Role         string        `json:"role"`
		Content      wire.Borrowed `json:"content"`
		ToolCalls    []wireCall    `json:"tool_calls"`
		ToolCallID   string        `json:"tool_call_id"`
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
	c := canonMessage{Role: m.Role, Content: wire.CanonContent(json.RawMessage(m.Content), "text"), CallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		c.Calls = append(c.Calls, canonCall{tc.ID, tc.Function.Name, wire.CanonArgs(tc.Function.Arguments)})
	}
	if m.FunctionCall != nil {
		c.Calls = append(c.Calls, canonCall{"", m.FunctionCall.Name, wire.CanonArgs(m.FunctionCall.Arguments)})
	}
	b, err := wire.MarshalCanonical(c)
	canon := wire.Canon{Role: role, Bytes: b}
	for _, call := range c.Calls {
		canon.Calls = append(canon.Calls, call.Name)
	}
	return canon, err
}
