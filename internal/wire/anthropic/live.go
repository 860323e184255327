package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/clawdapus/clawgo/internal/wire"
)

var _ wire.LiveStreaming = Format{}

// PrepareStreamingUpstream implements wire.LiveStreaming: stream true
// (Anthropic streams always carry usage).
func (Format) PrepareStreamingUpstream(r *wire.Request) {
	r.Fields["stream"] = json.RawMessage("true")
}

// NewLive implements wire.LiveStreaming: one message_start (that of the
// round whose content was shown first) … message_stop, every round's content blocks but its tool_use
// blocks forwarded as they come with their indexes renumbered across the
// rounds, the runner's own tool_use blocks of the final response after
// them, and one message_delta with the stop reason and the summed usage.
func (Format) NewLive(bool) wire.Live { return &live{} }

// ReplacedTail implements wire.LiveStreaming: the answer is one message.
func (f Format) ReplacedTail(resp *wire.Response) ([]json.RawMessage, error) {
	return f.AssistantTurn(resp, nil)
}

type live struct {
	// opening is the message_start to send with the first content;
	// started once it was sent.
	opening []byte
	started bool
	// next is the runner-side index of the next block; blocks maps the
	// current round's upstream indexes to the runner's (-1: withheld).
	next   int
	blocks map[int]int
}

// liveEvent is the part of an upstream event Observe reads.
type liveEvent struct {
	Type         string `json:"type"`
	Index        *int   `json:"index"`
	ContentBlock struct {
		Type string `json:"type"`
	} `json:"content_block"`
}

func (l *live) Observe(name string, data []byte) ([]wire.Event, error) {
	var ev liveEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("%w: stream event: %v", wire.ErrMalformed, err)
	}
	if ev.Type == "" {
		ev.Type = name
	}
	switch ev.Type {
	case "message_start":
		if !l.started {
			// Sent with the first content: until then, the message is the
			// latest round's, so a turn that shows nothing before its final
			// round is that round's message, and one that fails first gets
			// a status rather than an event.
			l.opening = append(l.opening[:0], data...)
		}
		return nil, nil
	case "content_block_start", "content_block_delta", "content_block_stop":
	default:
		return nil, nil // ping, message_delta, message_stop: the turn's own come at the end
	}
	if ev.Index == nil || *ev.Index < 0 {
		return nil, fmt.Errorf("%w: %s without an index", wire.ErrMalformed, ev.Type)
	}
	if l.blocks == nil {
		l.blocks = map[int]int{}
	}
	at, ok := l.blocks[*ev.Index]
	if ev.Type == "content_block_start" {
		if ok {
			return nil, fmt.Errorf("%w: content block %d started twice", wire.ErrMalformed, *ev.Index)
		}
		at = -1
		if ev.ContentBlock.Type != "tool_use" {
			at = l.next
			l.next++
		}
		l.blocks[*ev.Index] = at
	} else if !ok {
		return nil, fmt.Errorf("%w: %s for content block %d that never started", wire.ErrMalformed, ev.Type, *ev.Index)
	}
	if at < 0 {
		return nil, nil
	}
	obj, err := wire.DecodeObject(data)
	if err != nil {
		return nil, err
	}
	obj["index"] = json.RawMessage(fmt.Sprint(at))
	b, err := json.Marshal(obj)
	return append(l.open(), wire.Event{Name: ev.Type, Data: b}), err
}

// open returns the lifecycle's message_start when it was not sent yet.
func (l *live) open() []wire.Event {
	if l.started || l.opening == nil {
		return nil
	}
	l.started = true
	return []wire.Event{{Name: "message_start", Data: l.opening}}
}

func (l *live) EndRound() ([]wire.Event, error) {
	l.blocks = nil
	return nil, nil
}

func (l *live) Finish(resp *wire.Response, total wire.Usage) ([]wire.Event, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	events := l.open()
	var firstErr error
	emit := func(name string, payload any) {
		b, err := json.Marshal(payload)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		events = append(events, wire.Event{Name: name, Data: b})
	}
	if !l.started {
		l.started = true
		model := v.top["model"]
		if len(model) == 0 {
			model = json.RawMessage(`""`)
		}
		emit("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": resp.ID, "type": "message", "role": "assistant", "model": model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": streamUsage(total, 0)}})
	}
	for _, raw := range v.blocks {
		var b block
		if json.Unmarshal(raw, &b) != nil || b.Type != "tool_use" {
			continue
		}
		i := l.next
		l.next++
		emit("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
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
