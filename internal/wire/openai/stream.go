package openai

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/wire"
)

// textChunk is the size of one synthetic content delta.
const textChunk = 256

type chunkChoice struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	FinishReason *string        `json:"finish_reason"`
}

type chunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           json.RawMessage `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint json.RawMessage `json:"system_fingerprint,omitempty"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             any             `json:"usage,omitempty"`
}

type deltaCall struct {
	Index    int            `json:"index"`
	ID       string         `json:"id,omitempty"`
	Type     string         `json:"type,omitempty"`
	Function map[string]any `json:"function"`
}

// StreamEvents implements wire.ToolLoop: the chat.completion.chunk sequence
// of the response (role, content, tool calls, finish), a usage chunk when
// the runner asked for stream_options.include_usage, then [DONE].
func (Format) StreamEvents(resp *wire.Response, total wire.Usage, includeUsage bool) ([]wire.Event, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	created := v.created
	if len(created) == 0 {
		created = json.RawMessage("0")
	}
	base := chunk{ID: resp.ID, Object: "chat.completion.chunk", Created: created, Model: resp.Model, SystemFingerprint: v.top["system_fingerprint"]}
	var events []wire.Event
	emit := func(delta map[string]any, finish *string) error {
		c := base
		c.Choices = []chunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}
		b, err := json.Marshal(c)
		events = append(events, wire.Event{Data: b})
		return err
	}
	if err := emit(map[string]any{"role": "assistant", "content": ""}, nil); err != nil {
		return nil, err
	}
	for _, piece := range wire.ChunkText(resp.Text, textChunk) {
		if err := emit(map[string]any{"content": piece}, nil); err != nil {
			return nil, err
		}
	}
	if refusal, _ := wire.String(v.message["refusal"]); refusal != "" {
		if err := emit(map[string]any{"refusal": refusal}, nil); err != nil {
			return nil, err
		}
	}
	end, err := closing(base, resp, total, includeUsage)
	return append(events, end...), err
}

// closing is the end of a chunk stream answering resp: its tool calls,
// the finish reason, the usage chunk when the runner asked for it, and
// [DONE].
func closing(base chunk, resp *wire.Response, total wire.Usage, includeUsage bool) ([]wire.Event, error) {
	var events []wire.Event
	emit := func(delta map[string]any, finish *string) error {
		c := base
		c.Choices = []chunkChoice{{Index: 0, Delta: delta, FinishReason: finish}}
		b, err := json.Marshal(c)
		events = append(events, wire.Event{Data: b})
		return err
	}
	for i, call := range resp.Calls {
		head := deltaCall{Index: i, ID: call.ID, Type: "function", Function: map[string]any{"name": call.Name, "arguments": ""}}
		if err := emit(map[string]any{"tool_calls": []deltaCall{head}}, nil); err != nil {
			return nil, err
		}
		args := deltaCall{Index: i, Function: map[string]any{"arguments": string(call.Arguments)}}
		if err := emit(map[string]any{"tool_calls": []deltaCall{args}}, nil); err != nil {
			return nil, err
		}
	}
	finish := resp.Stop
	if finish == "" {
		finish = "stop"
		if len(resp.Calls) > 0 {
			finish = "tool_calls"
		}
	}
	if err := emit(map[string]any{}, &finish); err != nil {
		return nil, err
	}
	if includeUsage {
		c := base
		c.Choices = []chunkChoice{}
		u := map[string]any{"prompt_tokens": total.Input, "completion_tokens": total.Output, "total_tokens": total.Input + total.Output}
		if total.CachedInput > 0 {
			u["prompt_tokens_details"] = map[string]int{"cached_tokens": total.CachedInput}
		}
		if total.Reasoning > 0 {
			u["completion_tokens_details"] = map[string]int{"reasoning_tokens": total.Reasoning}
		}
		c.Usage = u
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		events = append(events, wire.Event{Data: b})
	}
	return append(events, wire.Event{Data: []byte("[DONE]")}), nil
}
