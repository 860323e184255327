package responses

import (
	"bytes"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/wire"
)

// textChunk is the size of one synthetic text delta.
const textChunk = 256

// StreamEvents implements wire.ToolLoop: one response lifecycle, as the
// API streams it — response.created and response.in_progress (the
// response without output or usage), then for each output item its added
// event, its content or argument deltas and its done event, and
// response.completed with the whole response and the turn's usage. Every
// event carries its type and a sequence number.
func (Format) StreamEvents(resp *wire.Response, total wire.Usage, _ bool) ([]wire.Event, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	s := &streamer{}
	pending := make(map[string]json.RawMessage, len(v.top))
	for k, val := range v.top {
		pending[k] = val
	}
	pending["status"] = json.RawMessage(`"in_progress"`)
	pending["output"] = json.RawMessage("[]")
	pending["usage"] = json.RawMessage("null")
	s.emit("response.created", map[string]any{"response": pending})
	s.emit("response.in_progress", map[string]any{"response": pending})
	for i, raw := range v.items {
		s.item(i, v.kinds[i], raw)
	}
	final, err := withUsage(v, total)
	if err != nil {
		return nil, err
	}
	done := evCompleted
	switch resp.Stop {
	case "incomplete":
		done = evIncomplete
	case "failed":
		done = evFailed
	}
	s.emit(done, map[string]any{"response": json.RawMessage(final)})
	return s.events, s.err
}

// streamer numbers and collects the events of one lifecycle.
type streamer struct {
	events []wire.Event
	seq    int
	err    error
}

func (s *streamer) emit(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	b, err := wire.MarshalUnescaped(fields)
	if err != nil && s.err == nil {
		s.err = err
	}
	s.events = append(s.events, wire.Event{Name: typ, Data: b})
}

// item streams output item i: added with its content emptied, the deltas,
// done whole.
func (s *streamer) item(i int, kind string, raw json.RawMessage) {
	obj, err := wire.DecodeObject(raw)
	if err != nil {
		s.err = err
		return
	}
	id, _ := wire.String(obj["id"])
	head := make(map[string]json.RawMessage, len(obj))
	for k, val := range obj {
		head[k] = val
	}
	if _, ok := obj["status"]; ok {
		head["status"] = json.RawMessage(`"in_progress"`)
	}
	switch kind {
	case "message":
		head["content"] = json.RawMessage("[]")
	case "function_call":
		head["arguments"] = json.RawMessage(`""`)
	case "custom_tool_call":
		head["input"] = json.RawMessage(`""`)
	}
	s.emit("response.output_item.added", map[string]any{"output_index": i, "item": head})
	switch kind {
	case "message":
		s.parts(i, id, obj["content"])
	case "function_call":
		args, ok := wire.String(obj["arguments"])
		if !ok {
			args = string(obj["arguments"])
		}
		for _, piece := range wire.ChunkText(args, textChunk) {
			s.emit("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": piece})
		}
		s.emit("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
	case "custom_tool_call":
		input, _ := wire.String(obj["input"])
		for _, piece := range wire.ChunkText(input, textChunk) {
			s.emit("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": i, "delta": piece})
		}
		s.emit("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": i, "input": input})
	}
	s.emit("response.output_item.done", map[string]any{"output_index": i, "item": raw})
}

// parts streams a message's content parts: output_text and refusal parts
// as deltas, others added and done whole.
func (s *streamer) parts(i int, id string, content json.RawMessage) {
	var parts []json.RawMessage
	if json.Unmarshal(content, &parts) != nil {
		return
	}
	for j, p := range parts {
		var part struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		}
		_ = json.Unmarshal(p, &part)
		at := func(extra map[string]any) map[string]any {
			extra["item_id"], extra["output_index"], extra["content_index"] = id, i, j
			return extra
		}
		switch part.Type {
		case "output_text":
			s.emit("response.content_part.added", at(map[string]any{"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}))
			for _, piece := range wire.ChunkText(part.Text, textChunk) {
				s.emit("response.output_text.delta", at(map[string]any{"delta": piece, "logprobs": []any{}}))
			}
			s.emit("response.output_text.done", at(map[string]any{"text": part.Text, "logprobs": []any{}}))
		case "refusal":
			s.emit("response.content_part.added", at(map[string]any{"part": map[string]any{"type": "refusal", "refusal": ""}}))
			for _, piece := range wire.ChunkText(part.Refusal, textChunk) {
				s.emit("response.refusal.delta", at(map[string]any{"delta": piece}))
			}
			s.emit("response.refusal.done", at(map[string]any{"refusal": part.Refusal}))
		default:
			s.emit("response.content_part.added", at(map[string]any{"part": p}))
		}
		s.emit("response.content_part.done", at(map[string]any{"part": p}))
	}
}

// NewAssembler implements wire.StreamAssembling. The terminal event of a
// Responses stream carries the whole response, so that is the history
// entry; a stream cut before it is rebuilt from its finished items.
func (Format) NewAssembler() wire.Assembler { return &assembler{} }

type assembler struct {
	wire.AssemblyBudget
	final json.RawMessage
	start json.RawMessage
	items []json.RawMessage
	// ev is decoded into for each event the assembler reads (nothing of
	// it is kept from one event to the next).
	ev asmEvent
}

// Observe implements wire.Assembler. What it keeps of an event is
// copied: the event's data is the relay's buffer.
func (a *assembler) Observe(name string, data []byte) {
	ev := &a.ev
	switch eventType(name, data) {
	case evCreated:
		if decodeEvent(data, ev) {
			a.start = bytes.Clone(ev.Response)
		}
	case evCompleted, evIncomplete, evFailed:
		if decodeEvent(data, ev) && len(ev.Response) <= wire.MaxAssembledBytes {
			a.final = bytes.Clone(ev.Response)
		} else {
			a.Truncated = true
		}
	case evItemDone:
		if decodeEvent(data, ev) && len(ev.Item) > 0 {
			if a.Used+len(ev.Item) > wire.MaxAssembledBytes {
				a.Truncated = true
				return
			}
			a.Used += len(ev.Item)
			a.items = append(a.items, bytes.Clone(ev.Item))
		}
	}
}

// Result implements wire.Assembler.
func (a *assembler) Result() (json.RawMessage, string) {
	if a.final != nil {
		return a.final, a.Note()
	}
	top := map[string]json.RawMessage{}
	if a.start != nil {
		_ = json.Unmarshal(a.start, &top)
		if top == nil {
			top = map[string]json.RawMessage{}
		}
	}
	items, _ := json.Marshal(a.items)
	if a.items == nil {
		items = json.RawMessage("[]")
	}
	top["output"] = items
	b, _ := json.Marshal(top)
	note := "stream ended before its response.completed event; history keeps the items that finished"
	if n := a.Note(); n != "" {
		note += "; " + n
	}
	return b, note
}
