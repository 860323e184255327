package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

var (
	_ wire.LiveStreaming  = Format{}
	_ wire.LiveContinuing = Format{}
)

// ContinuesFrom implements wire.LiveContinuing.
func (Format) ContinuesFrom(r *wire.Request) string {
	id, _ := wire.String(r.Fields[continuesMember])
	return id
}

// ContinueFrom implements wire.LiveContinuing.
func (Format) ContinueFrom(r *wire.Request, id string) {
	r.Fields[continuesMember] = wire.Quote(id)
}

// PrepareStreamingUpstream implements wire.LiveStreaming: PrepareUpstream's
// settings, streaming (a Responses stream always ends with the whole
// response, usage included).
func (f Format) PrepareStreamingUpstream(r *wire.Request) {
	f.PrepareUpstream(r)
	r.Fields["stream"] = json.RawMessage("true")
}

// NewLive implements wire.LiveStreaming: one response.created …
// response.completed lifecycle (the response.created of the round whose
// text was shown first, the final round's response, with the summed usage
// and that id, in the terminal event), numbered by one sequence: one message output item (output_index 0)
// holding every round's text as one output_text part, its deltas sent as
// they come, then the runner's own calls of the final round as items of
// their own. Reasoning items and the managed calls of hidden rounds are not
// shown.
func (Format) NewLive(bool) wire.Live { return &live{} }

// ReplacedTail implements wire.LiveStreaming: the final response's items
// but its calls (the runner keeps those as items of their own, after the
// message).
func (f Format) ReplacedTail(resp *wire.Response) ([]json.RawMessage, error) {
	return f.AssistantTurn(resp, []int{})
}

const evTextDelta = "response.output_text.delta"

type live struct {
	s streamer
	// opening is the response of the response.created to send with the
	// first text; started once it was sent.
	opening json.RawMessage
	started bool
	// msgID is the message item's id, set once it was added; text is
	// everything its deltas carried.
	msgID string
	text  strings.Builder
	// id is the lifecycle's response id (the first round's): the SDKs
	// refuse a terminal event of another response.
	id json.RawMessage
}

// liveEvent is the part of an upstream event Observe reads.
type liveEvent struct {
	Type     string          `json:"type"`
	Response json.RawMessage `json:"response"`
	ItemID   string          `json:"item_id"`
	Delta    string          `json:"delta"`
}

// take returns the events emitted since the last call.
func (l *live) take() ([]wire.Event, error) {
	out, err := l.s.events, l.s.err
	l.s.events, l.s.err = nil, nil
	return out, err
}

func (l *live) Observe(name string, data []byte) ([]wire.Event, error) {
	typ := name
	if typ == "" {
		typ, _ = wire.String(memberOf(data, "type"))
	}
	if typ != evCreated && typ != evTextDelta {
		return nil, nil
	}
	var ev liveEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("%w: stream event: %v", wire.ErrMalformed, err)
	}
	if typ == evCreated {
		if !l.started {
			// Sent with the first text: until then the response is the
			// latest round's, so a turn that shows nothing before its final
			// round is that round's response (its id the one to continue
			// from), and one that fails first gets a status, not an event.
			l.opening = append(l.opening[:0], ev.Response...)
		}
		return nil, nil
	}
	if ev.Delta == "" {
		return nil, nil
	}
	if !l.started {
		l.open(l.opening)
	}
	if l.msgID == "" {
		l.msgID = ev.ItemID
		if l.msgID == "" {
			l.msgID = "msg_cllama"
		}
		l.s.emit("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"id": l.msgID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
		l.s.emit("response.content_part.added", l.at(map[string]any{"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}))
	}
	l.text.WriteString(ev.Delta)
	l.s.emit(evTextDelta, l.at(map[string]any{"delta": ev.Delta, "logprobs": []any{}}))
	return l.take()
}

// memberOf is the raw value of a top-level member of data (nil when
// absent).
func memberOf(data []byte, key string) json.RawMessage {
	raw, _ := jsontop.Find(data, key)
	return raw
}

// open emits the lifecycle's opening events for the response object raw.
func (l *live) open(raw json.RawMessage) {
	l.started = true
	var resp map[string]json.RawMessage
	if json.Unmarshal(raw, &resp) != nil || resp == nil {
		resp = map[string]json.RawMessage{}
	}
	l.id = resp["id"]
	resp["status"] = json.RawMessage(`"in_progress"`)
	resp["output"] = json.RawMessage("[]")
	resp["usage"] = json.RawMessage("null")
	l.s.emit("response.created", map[string]any{"response": resp})
	l.s.emit("response.in_progress", map[string]any{"response": resp})
}

// at places a content event at the message's one text part.
func (l *live) at(fields map[string]any) map[string]any {
	fields["item_id"], fields["output_index"], fields["content_index"] = l.msgID, 0, 0
	return fields
}

func (l *live) EndRound() ([]wire.Event, error) { return nil, nil }

func (l *live) Finish(resp *wire.Response, total wire.Usage) ([]wire.Event, error) {
	v, err := viewOf(resp)
	if err != nil {
		return nil, err
	}
	if !l.started {
		if l.opening == nil {
			l.opening = v.raw
		}
		l.open(l.opening)
	}
	var output []json.RawMessage
	if l.msgID != "" {
		text := l.text.String()
		part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
		l.s.emit("response.output_text.done", l.at(map[string]any{"text": text, "logprobs": []any{}}))
		l.s.emit("response.content_part.done", l.at(map[string]any{"part": part}))
		item, err := json.Marshal(map[string]any{"id": l.msgID, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}})
		if err != nil {
			return nil, err
		}
		l.s.emit("response.output_item.done", map[string]any{"output_index": 0, "item": json.RawMessage(item)})
		output = append(output, item)
	}
	for _, i := range v.callItem {
		l.s.item(len(output), v.kinds[i], v.items[i])
		output = append(output, v.items[i])
	}
	top := make(map[string]json.RawMessage, len(v.top))
	for k, val := range v.top {
		top[k] = val
	}
	if len(l.id) > 0 {
		top["id"] = l.id
	}
	if top["output"], err = json.Marshal(output); err != nil {
		return nil, err
	}
	if output == nil {
		top["output"] = json.RawMessage("[]")
	}
	if top["usage"], err = json.Marshal(usageObject(total)); err != nil {
		return nil, err
	}
	done := evCompleted
	switch resp.Stop {
	case "incomplete":
		done = evIncomplete
	case "failed":
		done = evFailed
	}
	l.s.emit(done, map[string]any{"response": top})
	return l.take()
}

// ErrorEvent is the format's error event numbered in the lifecycle's
// sequence, for a turn that fails after its stream started.
func (l *live) ErrorEvent(errType, msg string) wire.Event {
	ev := Format{}.ErrorEvent(errType, msg)
	obj, err := wire.DecodeObject(ev.Data)
	if err != nil {
		return ev
	}
	obj["sequence_number"] = json.RawMessage(fmt.Sprint(l.s.seq))
	l.s.seq++
	if b, err := wire.MarshalUnescaped(obj); err == nil {
		ev.Data = b
	}
	return ev
}
