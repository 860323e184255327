package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// NewAssembler implements wire.StreamAssembling: message events become the
// message they stand for.
func (Format) NewAssembler() wire.Assembler { return &assembler{} }

type assembler struct {
	wire.AssemblyBudget
	message map[string]json.RawMessage
	blocks  map[int]*asmBlock
	delta   map[string]json.RawMessage // message_delta.delta (stop_reason, ...)
	usage   map[string]json.RawMessage
}

type asmBlock struct {
	fields    map[string]json.RawMessage
	text      strings.Builder
	json      strings.Builder
	thinking  strings.Builder
	signature strings.Builder
}

type asmEvent struct {
	Type         string                     `json:"type"`
	Index        int                        `json:"index"`
	Message      map[string]json.RawMessage `json:"message"`
	ContentBlock map[string]json.RawMessage `json:"content_block"`
	Delta        map[string]json.RawMessage `json:"delta"`
	Usage        map[string]json.RawMessage `json:"usage"`
}

func (a *assembler) Observe(_ string, data []byte) {
	if data[0] != '{' {
		return
	}
	switch d, res := fastEvent(data); res {
	case isDelta:
		a.blockDelta(d)
		return
	case isOther:
		return
	}
	if !jsontop.Valid(data) {
		return
	}
	var e asmEvent
	if json.Unmarshal(data, &e) != nil {
		return
	}
	switch e.Type {
	case "message_start":
		a.message = a.keepFields(e.Message)
		if u, ok := e.Message["usage"]; ok {
			var m map[string]json.RawMessage
			if json.Unmarshal(u, &m) == nil {
				a.usage = m
			}
		}
	case "content_block_start":
		if e.Index < 0 || e.Index > 1024 {
			return
		}
		if a.blocks == nil {
			a.blocks = map[int]*asmBlock{}
		}
		a.blocks[e.Index] = &asmBlock{fields: a.keepFields(e.ContentBlock)}
	case "content_block_delta":
		a.blockDelta(eventDelta(&e))
	case "message_delta":
		a.delta = e.Delta
		if a.usage == nil {
			a.usage = map[string]json.RawMessage{}
		}
		for k, v := range e.Usage {
			a.usage[k] = v // cumulative counts: the latest wins
		}
	}
}

// eventDelta is a content_block_delta event decoded by encoding/json as
// the assembler reads it.
func eventDelta(e *asmEvent) blockDelta {
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(e.Delta[k], &s)
		return s
	}
	d := blockDelta{Index: e.Index, Kind: str("type")}
	if k := deltaMember(d.Kind); k != "" {
		d.Text = str(k)
	}
	return d
}

// blockDelta adds a delta's text to its block.
func (a *assembler) blockDelta(d blockDelta) {
	b := a.blocks[d.Index]
	if b == nil {
		return
	}
	var sb *strings.Builder
	switch d.Kind {
	case "text_delta":
		sb = &b.text
	case "input_json_delta":
		sb = &b.json
	case "thinking_delta":
		sb = &b.thinking
	case "signature_delta":
		sb = &b.signature
	default:
		return
	}
	if d.Lit != nil {
		a.AddLiteral(sb, d.Lit)
	} else {
		a.Add(sb, d.Text)
	}
}

// keepFields counts a whole object (a message_start message, a content
// block as it started) against the budget; past it only the object's type
// is kept.
func (a *assembler) keepFields(f map[string]json.RawMessage) map[string]json.RawMessage {
	n := 0
	for k, v := range f {
		n += len(k) + len(v)
	}
	if a.Used+n > wire.MaxAssembledBytes {
		a.Truncated = true
		kept := map[string]json.RawMessage{}
		if t, ok := f["type"]; ok && len(t) <= 64 {
			kept["type"] = t
		}
		return kept
	}
	a.Used += n
	return f
}

func (a *assembler) Result() (json.RawMessage, string) {
	msg := map[string]json.RawMessage{}
	for k, v := range a.message {
		msg[k] = v
	}
	blocks := make([]map[string]json.RawMessage, 0, len(a.blocks))
	for _, i := range wire.SortedKeys(a.blocks) {
		b := a.blocks[i]
		f := map[string]json.RawMessage{}
		for k, v := range b.fields {
			f[k] = v
		}
		var typ string
		_ = json.Unmarshal(f["type"], &typ)
		switch typ {
		case "text":
			f["text"] = wire.MustString(b.text.String())
		case "thinking":
			f["thinking"] = wire.MustString(b.thinking.String())
			f["signature"] = wire.MustString(b.signature.String())
		case "tool_use", "server_tool_use":
			if in := strings.TrimSpace(b.json.String()); in != "" && json.Valid([]byte(in)) {
				f["input"] = json.RawMessage(in)
			}
		}
		blocks = append(blocks, f)
	}
	if c, err := json.Marshal(blocks); err == nil {
		msg["content"] = c
	}
	for k, v := range a.delta {
		if k != "type" {
			msg[k] = v
		}
	}
	if a.usage != nil {
		if u, err := json.Marshal(a.usage); err == nil {
			msg["usage"] = u
		}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, "could not assemble the streamed response: " + err.Error()
	}
	return b, a.Note()
}
