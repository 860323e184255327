package anthropic

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/wire"
)

const textChunk = 256

// StreamEvents implements wire.ToolLoop: message_start, one
// content_block_start / _delta / _stop group per block (text, tool_use with
// input_json_delta, thinking with thinking_delta and signature_delta, other
// blocks whole), message_delta with the stop reason and summed usage, and
// message_stop. Anthropic streams always carry usage.
func (Format) StreamEvents(resp *wire.Response, total wire.Usage, _ bool) ([]wire.Event, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	var events []wire.Event
	var firstErr error
	emit := func(name string, payload any) {
		b, err := json.Marshal(payload)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		events = append(events, wire.Event{Name: name, Data: b})
	}
	model := v.top["model"]
	if len(model) == 0 {
		model = json.RawMessage(`""`)
	}
	emit("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": resp.ID, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": streamUsage(total, 0),
	}})
	for i, raw := range v.blocks {
		var b block
		_ = json.Unmarshal(raw, &b)
		delta := func(d map[string]any) {
			emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		switch b.Type {
		case "text":
			emit("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, piece := range wire.ChunkText(b.Text, textChunk) {
				delta(map[string]any{"type": "text_delta", "text": piece})
			}
		case "tool_use":
			emit("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			delta(map[string]any{"type": "input_json_delta", "partial_json": string(input)})
		case "thinking":
			emit("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "thinking", "thinking": ""}})
			for _, piece := range wire.ChunkText(b.Thinking, textChunk) {
				delta(map[string]any{"type": "thinking_delta", "thinking": piece})
			}
			if b.Sig != "" {
				delta(map[string]any{"type": "signature_delta", "signature": b.Sig})
			}
		default:
			emit("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": raw})
		}
		emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	stop := resp.Stop
	if stop == "" {
		stop = "end_turn"
		if len(resp.Calls) > 0 {
			stop = "tool_use"
		}
	}
	emit("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": v.top["stop_sequence"]},
		"usage": streamUsage(total, total.Output)})
	emit("message_stop", map[string]any{"type": "message_stop"})
	return events, firstErr
}

// streamUsage is a stream event's usage: the summed counts, cached prompt
// tokens included when there were any.
func streamUsage(total wire.Usage, output int) map[string]int {
	u := map[string]int{"input_tokens": total.Input, "output_tokens": output}
	if total.CacheCreation > 0 {
		u["cache_creation_input_tokens"] = total.CacheCreation
	}
	if total.CacheRead > 0 {
		u["cache_read_input_tokens"] = total.CacheRead
	}
	return u
}
