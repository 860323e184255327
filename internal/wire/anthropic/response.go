package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/wire"
)

// view keeps the decoded response for later turns and streams.
type view struct {
	// raw is the response body; top its members.
	raw    []byte
	top    map[string]json.RawMessage
	blocks []json.RawMessage
	types  []string
	// callBlock[i] is the content index of Calls[i].
	callBlock []int
	usage     map[string]json.RawMessage
}

type block struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Thinking string          `json:"thinking"`
	Sig      string          `json:"signature"`
}

// ParseResponse implements wire.ToolLoop.
func (Format) ParseResponse(body []byte) (*wire.Response, error) {
	top, err := wire.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	v := &view{raw: body, top: top}
	var ok bool
	if v.blocks, ok = wire.Elements(top["content"]); !ok {
		return nil, fmt.Errorf("%w: content: want an array of blocks", wire.ErrMalformed)
	}
	resp := &wire.Response{Raw: body, Priv: v}
	resp.ID, _ = wire.String(top["id"])
	resp.Model, _ = wire.String(top["model"])
	resp.Stop, _ = wire.String(top["stop_reason"])
	for i, raw := range v.blocks {
		var b block
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("%w: content[%d]: %v", wire.ErrMalformed, i, err)
		}
		v.types = append(v.types, b.Type)
		switch b.Type {
		case "text":
			resp.Text += b.Text
		case "tool_use":
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			resp.Calls = append(resp.Calls, wire.Call{ID: b.ID, Name: b.Name, Arguments: input})
			v.callBlock = append(v.callBlock, i)
		}
	}
	if raw, ok := top["usage"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &v.usage); err != nil {
			return nil, fmt.Errorf("%w: usage: %v", wire.ErrMalformed, err)
		}
		var u struct {
			In            int `json:"input_tokens"`
			Out           int `json:"output_tokens"`
			CacheCreation int `json:"cache_creation_input_tokens"`
			CacheRead     int `json:"cache_read_input_tokens"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, fmt.Errorf("%w: usage: %v", wire.ErrMalformed, err)
		}
		resp.Usage = wire.Usage{Input: u.In, Output: u.Out, CacheCreation: u.CacheCreation, CacheRead: u.CacheRead}
	}
	return resp, nil
}

func viewOf(resp *wire.Response) (*view, error) {
	v, ok := resp.Priv.(*view)
	if !ok {
		return nil, fmt.Errorf("anthropic: response was not parsed by this format")
	}
	return v, nil
}

// AssistantTurn implements wire.ToolLoop: the response's content blocks as
// an assistant message, dropping tool_use blocks not in keep.
func (Format) AssistantTurn(resp *wire.Response, keep []int) ([]json.RawMessage, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	drop := map[int]bool{}
	if keep != nil {
		for _, bi := range v.callBlock {
			drop[bi] = true
		}
		for _, ci := range keep {
			delete(drop, v.callBlock[ci])
		}
	}
	blocks := make([]json.RawMessage, 0, len(v.blocks))
	for i, b := range v.blocks {
		if !drop[i] {
			blocks = append(blocks, b)
		}
	}
	return wire.One(json.Marshal(struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}{"assistant", blocks}))
}

// FinalBody implements wire.ToolLoop.
func (Format) FinalBody(resp *wire.Response, total wire.Usage) ([]byte, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	usage := make(map[string]json.RawMessage, len(v.usage)+2)
	for k, val := range v.usage {
		usage[k] = val
	}
	usage["input_tokens"], _ = json.Marshal(total.Input)
	usage["output_tokens"], _ = json.Marshal(total.Output)
	// Cached prompt tokens are summed like the rest, not left at the
	// last round's counts.
	if _, ok := usage["cache_creation_input_tokens"]; ok || total.CacheCreation > 0 {
		usage["cache_creation_input_tokens"], _ = json.Marshal(total.CacheCreation)
	}
	if _, ok := usage["cache_read_input_tokens"]; ok || total.CacheRead > 0 {
		usage["cache_read_input_tokens"], _ = json.Marshal(total.CacheRead)
	}
	raw, err := json.Marshal(usage)
	if err != nil {
		return nil, err
	}
	return wire.WithUsage(v.raw, v.top, raw)
}
