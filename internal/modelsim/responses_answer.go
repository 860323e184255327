package modelsim

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/wire"
)

// responseObject builds the response for a, with its output items, and
// stores it when the request allows.
func (s *Server) responseObject(c *Conversation, a answer, created time.Time) (map[string]any, []json.RawMessage) {
	rt := c.resp
	var output []json.RawMessage
	if len(rt.req.Reasoning) > 0 && string(rt.req.Reasoning) != "null" {
		item := map[string]any{"type": "reasoning", "id": s.ids.next("rs_sim"), "summary": []any{}}
		for _, inc := range rt.req.Include {
			if inc == "reasoning.encrypted_content" {
				item["encrypted_content"] = "sim-encrypted:" + item["id"].(string)
			}
		}
		output = append(output, mustMarshal(item))
	}
	if a.Text != "" || len(a.Calls) == 0 {
		output = append(output, mustMarshal(map[string]any{"type": "message", "id": s.ids.next("msg_sim"), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": a.Text, "annotations": []any{}}}}))
	}
	for _, call := range a.Calls {
		output = append(output, mustMarshal(map[string]any{"type": "function_call", "id": s.ids.next("fc_sim"), "call_id": call.ID,
			"name": call.Name, "arguments": string(call.Args), "status": "completed"}))
	}
	var prev any
	if rt.req.Previous != "" {
		prev = rt.req.Previous
	}
	obj := map[string]any{
		"id": a.ID, "object": "response", "created_at": created.Unix(), "status": "completed", "model": a.Model,
		"output": output, "instructions": orDefault(rt.req.Instructions, "null"), "tools": orDefault(rt.req.Tools, "[]"),
		"tool_choice": orDefault(rt.req.ToolChoice, `"auto"`), "parallel_tool_calls": orDefault(rt.req.Parallel, "true"),
		"store": rt.store, "previous_response_id": prev, "text": map[string]any{"format": map[string]string{"type": "text"}},
		"error": nil, "incomplete_details": nil, "metadata": map[string]any{}, "temperature": 1, "top_p": 1,
		"usage": map[string]any{"input_tokens": a.Usage.InputTokens, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": a.Usage.OutputTokens, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
			"total_tokens": a.Usage.InputTokens + a.Usage.OutputTokens},
	}
	if rt.store {
		s.kept.add(a.ID, &stored{body: mustMarshal(obj), input: s.withIDs(rt.input), output: output})
	}
	return obj, output
}

// writeResponses writes a response object.
func (s *Server) writeResponses(w http.ResponseWriter, c *Conversation, a answer, created time.Time) {
	obj, _ := s.responseObject(c, a, created)
	writeJSON(w, http.StatusOK, obj)
}

// streamResponses writes one response lifecycle: response.created and
// response.in_progress, each output item's added, delta and done events,
// and response.completed with the whole response.
func (s *Server) streamResponses(sw *sse.Writer, c *Conversation, a answer, created time.Time) error {
	obj, output := s.responseObject(c, a, created)
	seq := 0
	emit := func(typ string, fields map[string]any) error {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		b, err := json.Marshal(fields)
		if err != nil {
			return err
		}
		return sw.Event(sse.Event{Name: typ, Data: b})
	}
	pending := map[string]any{}
	for k, v := range obj {
		pending[k] = v
	}
	pending["status"], pending["output"], pending["usage"] = "in_progress", []any{}, nil
	if err := emit("response.created", map[string]any{"response": pending}); err != nil {
		return err
	}
	if err := emit("response.in_progress", map[string]any{"response": pending}); err != nil {
		return err
	}
	for i, raw := range output {
		var item map[string]any
		if err := json.Unmarshal(raw, &item); err != nil {
			return err
		}
		id, _ := item["id"].(string)
		head := map[string]any{}
		for k, v := range item {
			head[k] = v
		}
		switch item["type"] {
		case "message":
			head["status"], head["content"] = "in_progress", []any{}
		case "function_call":
			head["status"], head["arguments"] = "in_progress", ""
		}
		if err := emit("response.output_item.added", map[string]any{"output_index": i, "item": head}); err != nil {
			return err
		}
		switch item["type"] {
		case "message":
			text := a.Text
			at := map[string]any{"item_id": id, "output_index": i, "content_index": 0}
			with := func(k string, v any) map[string]any {
				m := map[string]any{k: v}
				for kk, vv := range at {
					m[kk] = vv
				}
				return m
			}
			if err := emit("response.content_part.added", with("part", map[string]any{"type": "output_text", "text": "", "annotations": []any{}})); err != nil {
				return err
			}
			for _, p := range wire.ChunkText(text, pieceSize(len(text), 24)) {
				ev := with("delta", p)
				ev["logprobs"] = []any{}
				if err := emit("response.output_text.delta", ev); err != nil {
					return err
				}
			}
			done := with("text", text)
			done["logprobs"] = []any{}
			if err := emit("response.output_text.done", done); err != nil {
				return err
			}
			if err := emit("response.content_part.done", with("part", map[string]any{"type": "output_text", "text": text, "annotations": []any{}})); err != nil {
				return err
			}
		case "function_call":
			args, _ := item["arguments"].(string)
			for _, p := range wire.ChunkText(args, pieceSize(len(args), 16)) {
				if err := emit("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": p}); err != nil {
					return err
				}
			}
			if err := emit("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args, "name": item["name"]}); err != nil {
				return err
			}
		}
		if err := emit("response.output_item.done", map[string]any{"output_index": i, "item": json.RawMessage(raw)}); err != nil {
			return err
		}
	}
	return emit("response.completed", map[string]any{"response": obj})
}

// pieceSize is how many bytes of an n-byte text each delta carries: at most
// most, and few enough that anything longer than a few characters arrives
// in at least two deltas, so a client's accumulation is exercised.
func pieceSize(n, most int) int {
	return min(most, max(4, (n+1)/2))
}
