package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/clawdapus/clawgo/internal/wire"
)

// canonItem is the identity of an input item for continuity keys.
type canonItem struct {
	Kind    string `json:"k"`
	Role    string `json:"r,omitempty"`
	Content []any  `json:"c,omitempty"`
	CallID  string `json:"i,omitempty"`
	Name    string `json:"n,omitempty"`
	Args    string `json:"a,omitempty"`
	// Other is the rest of an item of a kind without its own rule:
	// canonical JSON without id and status.
	Other json.RawMessage `json:"o,omitempty"`
}

// Canonical implements wire.ToolLoop. Messages are keyed by role and text
// (a string content equals its parts; ids, status and annotations are
// left out, as runners drop them); calls by call id, name and canonical
// arguments; call outputs by call id and output. System and developer
// messages are RoleSystem; reasoning and provider-run tool items
// (web search, file search, code interpreter, image generation, MCP)
// are RolePrelude: they lead into the message or call after them.
func (Format) Canonical(msg json.RawMessage) (wire.Canon, error) {
	var it item
	if err := json.Unmarshal(msg, &it); err != nil {
		return wire.Canon{}, fmt.Errorf("%w: item: %v", wire.ErrMalformed, err)
	}
	c := canonItem{Kind: it.Type}
	role := wire.RoleOther
	switch it.Type {
	case "", "message":
		c.Kind = "message"
		c.Role = it.Role
		switch it.Role {
		case "system", "developer":
			return wire.Canon{Role: wire.RoleSystem}, nil
		case "user":
			role = wire.RoleUser
		case "assistant":
			role = wire.RoleAssistant
		}
		c.Content = wire.CanonContent(it.Content, textParts...)
	case "function_call":
		role, c.CallID, c.Name, c.Args = wire.RoleAssistant, it.CallID, it.Name, wire.CanonArgs(it.Arguments)
	case "custom_tool_call":
		input, _ := wire.String(it.Input)
		role, c.CallID, c.Name, c.Args = wire.RoleAssistant, it.CallID, it.Name, input
	case "function_call_output", "custom_tool_call_output":
		var out struct {
			Output json.RawMessage `json:"output"`
		}
		_ = json.Unmarshal(msg, &out)
		role, c.CallID, c.Content = wire.RoleTool, it.CallID, wire.CanonContent(out.Output, textParts...)
	default:
		switch {
		case runnerCall[it.Type]:
			role = wire.RoleAssistant
		case strings.HasSuffix(it.Type, "_output") || it.Type == "mcp_approval_response":
			role = wire.RoleTool
		default:
			return wire.Canon{Role: wire.RolePrelude}, nil
		}
		obj, err := wire.DecodeObject(msg)
		if err != nil {
			return wire.Canon{}, err
		}
		delete(obj, "id")
		delete(obj, "status")
		b, _ := json.Marshal(obj)
		if c.Other, err = wire.CanonicalJSON(b); err != nil {
			return wire.Canon{}, err
		}
	}
	b, err := wire.MarshalCanonical(c)
	canon := wire.Canon{Role: role, Bytes: b}
	if c.Kind == "function_call" || c.Kind == "custom_tool_call" {
		canon.Calls = []string{c.Name}
	}
	return canon, err
}

// textParts are the content part types that carry text.
var textParts = []string{"input_text", "output_text", "text"}

// runnerCall are the item kinds, besides function and custom tool calls,
// that the runner executes and answers with an *_output item.
var runnerCall = map[string]bool{
	"computer_call":        true,
	"local_shell_call":     true,
	"shell_call":           true,
	"apply_patch_call":     true,
	"mcp_approval_request": true,
}
