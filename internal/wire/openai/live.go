package openai

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/clawdapus/clawgo/internal/wire"
)

var _ wire.LiveStreaming = Format{}

// PrepareStreamingUpstream implements wire.LiveStreaming: stream true,
// with stream_options.include_usage (whatever the runner asked), so every
// round reports its usage; other stream options are the runner's.
func (Format) PrepareStreamingUpstream(r *wire.Request) {
	r.Fields["stream"] = json.RawMessage("true")
	opts := map[string]json.RawMessage{}
	if raw, ok := r.Fields["stream_options"]; ok {
		if obj, err := wire.DecodeObject(raw); err == nil && obj != nil {
			opts = obj
		}
	}
	opts["include_usage"] = json.RawMessage("true")
	if b, err := json.Marshal(opts); err == nil {
		r.Fields["stream_options"] = b
	}
}

// NewLive implements wire.LiveStreaming: one chat.completion.chunk stream
// with the first round's id, created and model throughout, the rounds'
// content and refusal deltas as they come, the runner's own calls and
// finish_reason once at the end, one usage chunk (summed) when the runner
// asked for include_usage, and [DONE].
func (Format) NewLive(includeUsage bool) wire.Live { return &live{includeUsage: includeUsage} }

// ReplacedTail implements wire.LiveStreaming: the answer is one message.
func (f Format) ReplacedTail(resp *wire.Response) ([]json.RawMessage, error) {
	return f.AssistantTurn(resp, nil)
}

type live struct {
	includeUsage bool
	// base is the chunk every event is made of; have once it is set (from
	// the first upstream chunk); opened once the role chunk was sent.
	base         chunk
	have, opened bool
	c            asmChunk
}

func (l *live) Observe(_ string, data []byte) ([]wire.Event, error) {
	if data[0] != '{' {
		return nil, nil // [DONE]: the turn's own comes at the end
	}
	c := &l.c
	*c = asmChunk{Choices: c.Choices[:0]}
	if !decodeChunk(data, c) {
		return nil, fmt.Errorf("%w: stream chunk", wire.ErrMalformed)
	}
	if !l.have && c.ID != "" {
		l.have = true
		l.base = chunk{ID: c.ID, Object: "chat.completion.chunk", Created: json.RawMessage(strconv.FormatInt(c.Created, 10)), Model: c.Model}
		if c.Fingerprint != "" {
			l.base.SystemFingerprint = wire.MustString(c.Fingerprint)
		}
	}
	var out []wire.Event
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		for _, d := range []struct {
			key string
			s   *string
		}{{"content", ch.Delta.Content}, {"refusal", ch.Delta.Refusal}} {
			if d.s == nil || *d.s == "" {
				continue
			}
			ev, err := l.delta(map[string]any{d.key: *d.s})
			if err != nil {
				return nil, err
			}
			out = append(out, ev...)
		}
	}
	return out, nil
}

// delta is one content chunk, after the role chunk when it is the first.
func (l *live) delta(d map[string]any) ([]wire.Event, error) {
	var out []wire.Event
	if !l.opened {
		l.opened = true
		ev, err := l.chunk(map[string]any{"role": "assistant", "content": ""})
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	ev, err := l.chunk(d)
	return append(out, ev), err
}

func (l *live) chunk(d map[string]any) (wire.Event, error) {
	c := l.base
	c.Choices = []chunkChoice{{Index: 0, Delta: d}}
	b, err := json.Marshal(c)
	return wire.Event{Data: b}, err
}

func (l *live) EndRound() ([]wire.Event, error) { return nil, nil }

func (l *live) Finish(resp *wire.Response, total wire.Usage) ([]wire.Event, error) {
	if !l.have {
		l.have = true
		l.base = chunk{ID: resp.ID, Object: "chat.completion.chunk", Created: json.RawMessage("0"), Model: resp.Model}
		if v, err := viewOf(resp); err == nil && len(v.created) > 0 {
			l.base.Created = v.created
		}
	}
	var out []wire.Event
	if !l.opened {
		l.opened = true
		ev, err := l.chunk(map[string]any{"role": "assistant", "content": ""})
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	end, err := closing(l.base, resp, total, l.includeUsage)
	return append(out, end...), err
}
