// Package anthropic is the Anthropic messages wire format (POST
// /v1/messages) behind the wire interfaces: tool_use / tool_result content blocks
// and the message_start … message_stop event stream.
package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/wire"
)

// Format implements wire.ToolLoop for Anthropic messages.
type Format struct{}

// New returns the Anthropic format.
func New() Format { return Format{} }

// The format has every ability cllama uses.
var (
	_ wire.ToolLoop         = Format{}
	_ wire.FeedInjector     = Format{}
	_ wire.StreamAssembling = Format{}
)

// ParseCheckedRequest implements wire.ToolLoop. The system prompt is a top-level
// member and stays in Fields.
func (Format) ParseCheckedRequest(body []byte) (*wire.Request, error) {
	top, err := wire.SplitObject(body)
	if err != nil {
		return nil, err
	}
	r := &wire.Request{Fields: top, IncludeUsage: true}
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
	for _, t := range r.Tools {
		var def struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &def) == nil && def.Name != "" {
			r.ToolNames = append(r.ToolNames, def.Name)
		}
	}
	r.Stream = wire.Bool(top["stream"])
	return r, nil
}

// ToolDefinition implements wire.ToolLoop.
func (Format) ToolDefinition(name, description string, schema json.RawMessage) (json.RawMessage, error) {
	return json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}{name, description, schema})
}

// RewriteToolChoice implements wire.ToolLoop for {"type":"tool","name":X}.
func (Format) RewriteToolChoice(r *wire.Request, rename func(string) (string, bool)) error {
	raw, ok := r.Fields["tool_choice"]
	if !ok || len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	choice, err := wire.DecodeObject(raw)
	if err != nil {
		return err
	}
	if typ, _ := wire.String(choice["type"]); typ != "tool" {
		return nil
	}
	name, _ := wire.String(choice["name"])
	to, ok := rename(name)
	if !ok || to == name {
		return nil
	}
	choice["name"] = wire.Quote(to)
	r.Fields["tool_choice"], err = json.Marshal(choice)
	return err
}

// PrepareUpstream implements wire.ToolLoop.
func (Format) PrepareUpstream(r *wire.Request) {
	r.Fields["stream"] = json.RawMessage("false")
}

type toolResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

// ResultTurn implements wire.ToolLoop: one user message holding a
// tool_result block per result, in call order.
func (Format) ResultTurn(results []wire.Result) ([]json.RawMessage, error) {
	blocks := make([]toolResultBlock, 0, len(results))
	for _, res := range results {
		blocks = append(blocks, toolResultBlock{"tool_result", res.CallID, string(res.Content), res.IsError})
	}
	b, err := json.Marshal(struct {
		Role    string            `json:"role"`
		Content []toolResultBlock `json:"content"`
	}{"user", blocks})
	if err != nil {
		return nil, err
	}
	return []json.RawMessage{b}, nil
}

// RelaxToolChoice implements wire.ToolLoop; disable_parallel_tool_use is kept.
func (Format) RelaxToolChoice(r *wire.Request) {
	raw, ok := r.Fields["tool_choice"]
	if !ok {
		return
	}
	choice, err := wire.DecodeObject(raw)
	if err != nil {
		return
	}
	typ, _ := wire.String(choice["type"])
	if typ != "tool" && typ != "any" {
		return
	}
	out := map[string]json.RawMessage{"type": json.RawMessage(`"auto"`)}
	if d, ok := choice["disable_parallel_tool_use"]; ok {
		out["disable_parallel_tool_use"] = d
	}
	r.Fields["tool_choice"], _ = json.Marshal(out)
}
