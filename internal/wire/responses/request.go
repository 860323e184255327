package responses

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/clawdapus/clawgo/internal/wire"
)

// inputKey is the member holding the conversation.
const inputKey = "input"

// ErrConversation refuses a request that names a provider-side
// conversation when managed tools would add hidden rounds to it.
var ErrConversation = errors.New(`"conversation" is not supported with managed tools: the provider would keep the hidden tool rounds in the conversation twice; send the whole input each turn, or continue with previous_response_id`)

// ParseCheckedRequest implements wire.ToolLoop. A string input is one user
// message; items stay raw.
func (Format) ParseCheckedRequest(body []byte) (*wire.Request, error) {
	top, err := wire.SplitObject(body)
	if err != nil {
		return nil, err
	}
	r := &wire.Request{Fields: top, MessagesKey: inputKey}
	if raw, ok := top[inputKey]; ok {
		if s, isString := wire.String(raw); isString && string(raw) != "null" {
			msg, err := json.Marshal(struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}{"user", s})
			if err != nil {
				return nil, err
			}
			r.Messages = []json.RawMessage{msg}
		} else if r.Messages, err = wire.SplitArray(raw); err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		delete(top, inputKey)
	}
	if raw, ok := top["tools"]; ok {
		if r.Tools, err = wire.SplitArray(raw); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
		delete(top, "tools")
	}
	for _, t := range r.Tools {
		if name := toolName(t); name != "" {
			r.ToolNames = append(r.ToolNames, name)
		}
	}
	if c, ok := top["conversation"]; ok && string(c) != "null" {
		return nil, ErrConversation
	}
	prev, _ := wire.String(top["previous_response_id"])
	r.ProviderHolds = prev != ""
	r.Stream = wire.Bool(top["stream"])
	r.IncludeUsage = true // response.completed always carries usage
	return r, nil
}

// toolName is the name of a function or custom tool; provider-run tools
// (web search, file search, code interpreter, MCP, …) have none the model
// calls by.
func toolName(def json.RawMessage) string {
	var t struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(def, &t) != nil || (t.Type != "function" && t.Type != "custom") {
		return ""
	}
	return t.Name
}

// ToolDefinition implements wire.ToolLoop. strict is false: the Responses
// API defaults it to true, which requires every schema to close its
// objects and require every property, and managed tools' schemas are the
// services' own.
func (Format) ToolDefinition(name, description string, schema json.RawMessage) (json.RawMessage, error) {
	return json.Marshal(struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict"`
	}{"function", name, description, schema, false})
}

// RewriteToolChoice implements wire.ToolLoop: {"type":"function","name":X}
// and the function tools of {"type":"allowed_tools","tools":[…]}.
func (Format) RewriteToolChoice(r *wire.Request, rename func(string) (string, bool)) error {
	raw, ok := r.Fields["tool_choice"]
	if !ok || len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	choice, err := wire.DecodeObject(raw)
	if err != nil {
		return err
	}
	changed := false
	typ, _ := wire.String(choice["type"])
	switch typ {
	case "function":
		changed = renameMember(choice, rename)
	case "allowed_tools":
		var tools []map[string]json.RawMessage
		if json.Unmarshal(choice["tools"], &tools) != nil {
			return nil
		}
		for _, t := range tools {
			if tt, _ := wire.String(t["type"]); tt == "function" && renameMember(t, rename) {
				changed = true
			}
		}
		if changed {
			if choice["tools"], err = json.Marshal(tools); err != nil {
				return err
			}
		}
	}
	if changed {
		r.Fields["tool_choice"], err = json.Marshal(choice)
	}
	return err
}

// renameMember renames obj's "name" member when rename says so.
func renameMember(obj map[string]json.RawMessage, rename func(string) (string, bool)) bool {
	name, _ := wire.String(obj["name"])
	to, ok := rename(name)
	if !ok || to == name {
		return false
	}
	obj["name"] = wire.Quote(to)
	return true
}

// PrepareUpstream implements wire.ToolLoop: stream false (no
// stream_options), and, for a reasoning request the provider does not
// store (store:false), include reasoning.encrypted_content, so the
// reasoning items of a hidden round can be sent back in the next one: the
// provider cannot look them up by id.
func (Format) PrepareUpstream(r *wire.Request) {
	r.Fields["stream"] = json.RawMessage("false")
	delete(r.Fields, "stream_options")
	if raw, ok := r.Fields["store"]; !ok || string(raw) != "false" {
		return
	}
	if raw, ok := r.Fields["reasoning"]; !ok || string(raw) == "null" {
		return
	}
	const want = "reasoning.encrypted_content"
	var include []json.RawMessage
	if raw, ok := r.Fields["include"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &include) != nil {
			return // not a list: leave it for the provider to reject
		}
	}
	for _, v := range include {
		if s, _ := wire.String(v); s == want {
			return
		}
	}
	if b, err := json.Marshal(append(include, wire.Quote(want))); err == nil {
		r.Fields["include"] = b
	}
}

// ResultTurn implements wire.ToolLoop: one function_call_output item per
// result (the envelope says whether the call failed).
func (Format) ResultTurn(results []wire.Result) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(results))
	for _, res := range results {
		b, err := json.Marshal(struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}{"function_call_output", res.CallID, string(res.Content)})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// RelaxToolChoice implements wire.ToolLoop: "required", a named tool or a
// forced provider-run tool become "auto"; allowed_tools keeps its list and
// takes mode "auto".
func (Format) RelaxToolChoice(r *wire.Request) {
	raw, ok := r.Fields["tool_choice"]
	if !ok {
		return
	}
	if s, isString := wire.String(raw); isString {
		if s == "required" {
			r.Fields["tool_choice"] = json.RawMessage(`"auto"`)
		}
		return
	}
	if choice, err := wire.DecodeObject(raw); err == nil {
		if typ, _ := wire.String(choice["type"]); typ == "allowed_tools" {
			choice["mode"] = json.RawMessage(`"auto"`)
			if b, err := json.Marshal(choice); err == nil {
				r.Fields["tool_choice"] = b
			}
			return
		}
	}
	r.Fields["tool_choice"] = json.RawMessage(`"auto"`)
}
