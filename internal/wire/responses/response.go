package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/clawdapus/clawgo/internal/wire"
)

// view is the decoded part of a response the format needs again later.
type view struct {
	// raw is the response body, where it came as one; top its members.
	raw []byte
	top map[string]json.RawMessage
	// items are the output items, byte for byte; kinds their types.
	items []json.RawMessage
	kinds []string
	// callItem is the index in items of each of the response's Calls.
	callItem []int
}

// item is the part of an output item the format reads.
type item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
}

// ParseResponse implements wire.ToolLoop. Calls are the function calls
// (managed tools and the runner's functions) and custom tool calls (always
// the runner's); provider-run tools' items are not calls.
func (Format) ParseResponse(body []byte) (*wire.Response, error) {
	top, err := wire.DecodeObject(body)
	if err != nil {
		return nil, err
	}
	v := &view{raw: body, top: top}
	if raw, ok := top["output"]; !ok || string(raw) == "null" {
		return nil, fmt.Errorf("%w: output: want an array of items", wire.ErrMalformed)
	} else if v.items, ok = wire.Elements(raw); !ok {
		err := json.Unmarshal(raw, &v.items)
		return nil, fmt.Errorf("%w: output: %v", wire.ErrMalformed, err)
	}
	resp := &wire.Response{Raw: body, Priv: v}
	resp.ID, _ = wire.String(top["id"])
	resp.Model, _ = wire.String(top["model"])
	resp.Stop, _ = wire.String(top["status"])
	var text strings.Builder
	for i, raw := range v.items {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("%w: output[%d]: %v", wire.ErrMalformed, i, err)
		}
		v.kinds = append(v.kinds, it.Type)
		switch it.Type {
		case "message":
			text.WriteString(outputText(it.Content))
		case "function_call":
			args, ok := wire.String(it.Arguments)
			if !ok { // some providers send an object instead of a string
				args = string(it.Arguments)
			}
			resp.Calls = append(resp.Calls, wire.Call{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(args)})
			v.callItem = append(v.callItem, i)
		case "custom_tool_call":
			input, _ := wire.String(it.Input)
			resp.Calls = append(resp.Calls, wire.Call{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(input)})
			v.callItem = append(v.callItem, i)
		}
	}
	resp.Text = text.String()
	if raw, ok := top["usage"]; ok && string(raw) != "null" {
		if !readUsage(raw, &resp.Usage) && string(raw) != "{}" {
			return nil, fmt.Errorf("%w: usage", wire.ErrMalformed)
		}
	}
	return resp, nil
}

// outputText is the text of a message's output_text parts.
func outputText(content json.RawMessage) string {
	if s, ok := wire.String(content); ok {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "output_text" || p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func viewOf(resp *wire.Response) (*view, error) {
	v, ok := resp.Priv.(*view)
	if !ok {
		return nil, fmt.Errorf("responses: response was not parsed by this format")
	}
	return v, nil
}

// AssistantTurn implements wire.ToolLoop: the output items in order,
// without the calls not in keep. Reasoning items go back whole (with
// encrypted_content, which a provider that does not store responses needs
// to continue the reasoning); message and call items go back without the
// id and status the provider gave them, as input items of a new request.
func (Format) AssistantTurn(resp *wire.Response, keep []int) ([]json.RawMessage, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	drop := map[int]bool{}
	if keep != nil {
		for _, ii := range v.callItem {
			drop[ii] = true
		}
		for _, ci := range keep {
			delete(drop, v.callItem[ci])
		}
	}
	out := make([]json.RawMessage, 0, len(v.items))
	for i, raw := range v.items {
		if drop[i] {
			continue
		}
		switch v.kinds[i] {
		case "message", "function_call", "custom_tool_call":
			obj, err := wire.DecodeObject(raw)
			if err != nil {
				return nil, err
			}
			delete(obj, "id")
			delete(obj, "status")
			if raw, err = json.Marshal(obj); err != nil {
				return nil, err
			}
		}
		out = append(out, raw)
	}
	return out, nil
}

// FinalBody implements wire.ToolLoop: the last response with usage summed
// over the turn's rounds.
func (Format) FinalBody(resp *wire.Response, total wire.Usage) ([]byte, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	return withUsage(v, total)
}

// withUsage is the response with its usage replaced by total.
func withUsage(v *view, total wire.Usage) ([]byte, error) {
	raw, err := json.Marshal(usageObject(total))
	if err != nil {
		return nil, err
	}
	return wire.WithUsage(v.raw, v.top, raw)
}

type usageJSON struct {
	Input        int `json:"input_tokens"`
	InputDetails struct {
		Cached int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	Output        int `json:"output_tokens"`
	OutputDetails struct {
		Reasoning int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	Total int `json:"total_tokens"`
}

func usageObject(u wire.Usage) usageJSON {
	var j usageJSON
	j.Input, j.Output, j.Total = u.Input, u.Output, u.Input+u.Output
	j.InputDetails.Cached, j.OutputDetails.Reasoning = u.CachedInput, u.Reasoning
	return j
}
