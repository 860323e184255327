// Package openai is the OpenAI chat-completions wire format
// (POST /v1/chat/completions) behind the wire interfaces.
package openai

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/wire"
)

// Format implements wire.ToolLoop for OpenAI chat completions.
type Format struct{}

// New returns the OpenAI format.
func New() Format { return Format{} }

// The format has every ability cllama uses.
var (
	_ wire.ToolLoop         = Format{}
	_ wire.FeedInjector     = Format{}
	_ wire.StreamAssembling = Format{}
)

// ParseCheckedRequest implements wire.ToolLoop. Legacy functions[] become tools[]
// and function_call becomes tool_choice (spec 000 "For OpenAI-compatible
// requests, legacy functions[] are normalized into tools[] before merge").
func (Format) ParseCheckedRequest(body []byte) (*wire.Request, error) {
	top, err := wire.SplitObject(body)
	if err != nil {
		return nil, err
	}
	r := &wire.Request{Fields: top}
	if raw, ok := top["messages"]; ok {
		if r.Messages, err = wire.SplitArray(raw); err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
		delete(top, "messages")
	}
	if raw, ok := top["tools"]; ok {
		if r.Tools, err = wire.SplitArray(raw); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
		delete(top, "tools")
	}
	if raw, ok := top["functions"]; ok {
		var fns []json.RawMessage
		if string(raw) != "null" {
			if err := json.Unmarshal(raw, &fns); err != nil {
				return nil, fmt.Errorf("%w: functions: %v", wire.ErrMalformed, err)
			}
		}
		for _, fn := range fns {
			t, _ := json.Marshal(struct {
				Type     string          `json:"type"`
				Function json.RawMessage `json:"function"`
			}{"function", fn})
			r.Tools = append(r.Tools, t)
		}
		delete(top, "functions")
	}
	if raw, ok := top["function_call"]; ok {
		if _, has := top["tool_choice"]; !has && string(raw) != "null" {
			top["tool_choice"] = legacyChoice(raw)
		}
		delete(top, "function_call")
	}
	for _, t := range r.Tools {
		if name := toolName(t); name != "" {
			r.ToolNames = append(r.ToolNames, name)
		}
	}
	r.Stream = wire.Bool(top["stream"])
	if raw, ok := top["stream_options"]; ok {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		_ = json.Unmarshal(raw, &so)
		r.IncludeUsage = so.IncludeUsage
	}
	return r, nil
}

// legacyChoice maps function_call ("none", "auto", {"name":X}) to tool_choice.
func legacyChoice(raw json.RawMessage) json.RawMessage {
	var named struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &named) == nil && named.Name != "" {
		return namedChoice(named.Name)
	}
	return raw
}

func namedChoice(name string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": name}})
	return b
}

// toolName is the name of a function or custom tool definition.
func toolName(def json.RawMessage) string {
	var t struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Custom struct {
			Name string `json:"name"`
		} `json:"custom"`
	}
	if json.Unmarshal(def, &t) != nil {
		return ""
	}
	if t.Function.Name != "" {
		return t.Function.Name
	}
	return t.Custom.Name
}

// ToolDefinition implements wire.ToolLoop.
func (Format) ToolDefinition(name, description string, schema json.RawMessage) (json.RawMessage, error) {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	return json.Marshal(struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}{"function", fn{name, description, schema}})
}

// RewriteToolChoice implements wire.ToolLoop. It handles the named form
// {"type":"function","function":{"name":X}} and the allowed_tools form.
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
	if fn, ok := choice["function"]; ok {
		if nfn, ok := renameIn(fn, rename); ok {
			choice["function"] = nfn
			changed = true
		}
	}
	if at, ok := choice["allowed_tools"]; ok {
		if obj, err := wire.DecodeObject(at); err == nil {
			var tools []json.RawMessage
			if json.Unmarshal(obj["tools"], &tools) == nil {
				for i, t := range tools {
					tm, err := wire.DecodeObject(t)
					if err != nil {
						continue
					}
					if nfn, ok := renameIn(tm["function"], rename); ok {
						tm["function"] = nfn
						tools[i], _ = json.Marshal(tm)
						changed = true
					}
				}
				obj["tools"], _ = json.Marshal(tools)
				choice["allowed_tools"], _ = json.Marshal(obj)
			}
		}
	}
	if changed {
		r.Fields["tool_choice"], err = json.Marshal(choice)
	}
	return err
}

// renameIn renames the "name" member of a {"name":X,...} object.
func renameIn(raw json.RawMessage, rename func(string) (string, bool)) (json.RawMessage, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	obj, err := wire.DecodeObject(raw)
	if err != nil {
		return nil, false
	}
	name, _ := wire.String(obj["name"])
	to, ok := rename(name)
	if !ok || to == name {
		return nil, false
	}
	obj["name"] = wire.Quote(to)
	out, err := json.Marshal(obj)
	return out, err == nil
}

// PrepareUpstream implements wire.ToolLoop: stream false, and no
// stream_options (the API rejects it on non-streaming requests).
func (Format) PrepareUpstream(r *wire.Request) {
	r.Fields["stream"] = json.RawMessage("false")
	delete(r.Fields, "stream_options")
}

// ResultTurn implements wire.ToolLoop: one role "tool" message per result.
func (Format) ResultTurn(results []wire.Result) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(results))
	for _, res := range results {
		b, err := json.Marshal(struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{"tool", res.CallID, string(res.Content)})
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// RelaxToolChoice implements wire.ToolLoop.
func (Format) RelaxToolChoice(r *wire.Request) {
	raw, ok := r.Fields["tool_choice"]
	if !ok {
		return
	}
	if s, isString := wire.String(raw); isString && s != "required" {
		return
	}
	r.Fields["tool_choice"] = json.RawMessage(`"auto"`)
}
