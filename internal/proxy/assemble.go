package proxy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/clawdapus/clawgo/internal/exchange"
)

// maxAssembledBytes bounds the text an assembler keeps for one stream's
// history entry; past it, deltas are dropped and the entry notes it.
const maxAssembledBytes = 4 << 20

// streamAssembler rebuilds the non-streaming equivalent of a stream for
// session history (history.Entry.Response), one event at a time.
type streamAssembler interface {
	observe(name string, data []byte)
	// result returns the assembled response and a note when it is
	// incomplete.
	result() (json.RawMessage, string)
}

func newAssembler(f exchange.Format) streamAssembler {
	if f == exchange.Anthropic {
		return &anthropicAssembler{}
	}
	return &openAIAssembler{choices: map[int]*openAIChoice{}}
}

// budget counts kept bytes against maxAssembledBytes.
type budget struct {
	used      int
	truncated bool
}

func (b *budget) add(sb *strings.Builder, s string) {
	if b.used+len(s) > maxAssembledBytes {
		b.truncated = true
		return
	}
	b.used += len(s)
	sb.WriteString(s)
}

// keep returns s when it fits the budget (counted once: a replaced value
// gives back its old bytes), else old.
func (b *budget) keep(old, s string) string {
	if b.used-len(old)+len(s) > maxAssembledBytes {
		b.truncated = true
		return old
	}
	b.used += len(s) - len(old)
	return s
}

func (b *budget) note() string {
	if b.truncated {
		return fmt.Sprintf("streamed response larger than %d bytes; history keeps the first part", maxAssembledBytes)
	}
	return ""
}

// OpenAI chat.completion.chunk → chat.completion.

type openAIAssembler struct {
	budget
	id, model, fingerprint string
	created                int64
	choices                map[int]*openAIChoice
	usage                  json.RawMessage
}

type openAIChoice struct {
	role, finish string
	content      strings.Builder
	refusal      strings.Builder
	reasoning    strings.Builder
	toolCalls    map[int]*openAIToolCall
}

type openAIToolCall struct {
	id, typ, name string
	args          strings.Builder
}

type openAIChunk struct {
	ID          string          `json:"id"`
	Model       string          `json:"model"`
	Created     int64           `json:"created"`
	Fingerprint string          `json:"system_fingerprint"`
	Usage       json.RawMessage `json:"usage"`
	Choices     []struct {
		Index        int     `json:"index"`
		FinishReason *string `json:"finish_reason"`
		Delta        struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			Refusal          *string `json:"refusal"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
}

func (a *openAIAssembler) observe(_ string, data []byte) {
	var c openAIChunk
	if data[0] != '{' || json.Unmarshal(data, &c) != nil {
		return
	}
	if a.id == "" {
		a.id, a.model, a.created, a.fingerprint = c.ID, c.Model, c.Created, c.Fingerprint
	}
	if len(c.Usage) > 0 && string(c.Usage) != "null" {
		a.usage = append(json.RawMessage(nil), c.Usage...)
	}
	for _, ch := range c.Choices {
		if ch.Index < 0 || ch.Index > 128 {
			continue
		}
		st := a.choices[ch.Index]
		if st == nil {
			st = &openAIChoice{toolCalls: map[int]*openAIToolCall{}}
			a.choices[ch.Index] = st
		}
		if ch.Delta.Role != "" {
			st.role = ch.Delta.Role
		}
		if ch.Delta.Content != nil {
			a.add(&st.content, *ch.Delta.Content)
		}
		if ch.Delta.Refusal != nil {
			a.add(&st.refusal, *ch.Delta.Refusal)
		}
		if ch.Delta.ReasoningContent != nil {
			a.add(&st.reasoning, *ch.Delta.ReasoningContent)
		}
		if ch.FinishReason != nil {
			st.finish = *ch.FinishReason
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index > 1024 {
				continue
			}
			t := st.toolCalls[tc.Index]
			if t == nil {
				t = &openAIToolCall{}
				st.toolCalls[tc.Index] = t
			}
			if tc.ID != "" {
				t.id = a.keep(t.id, tc.ID)
			}
			if tc.Type != "" {
				t.typ = a.keep(t.typ, tc.Type)
			}
			if tc.Function.Name != "" {
				t.name = a.keep(t.name, tc.Function.Name)
			}
			a.add(&t.args, tc.Function.Arguments)
		}
	}
}

func (a *openAIAssembler) result() (json.RawMessage, string) {
	type toolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type message struct {
		Role             string     `json:"role"`
		Content          *string    `json:"content"`
		Refusal          *string    `json:"refusal,omitempty"`
		ReasoningContent *string    `json:"reasoning_content,omitempty"`
		ToolCalls        []toolCall `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason *string `json:"finish_reason"`
	}
	out := struct {
		ID          string          `json:"id"`
		Object      string          `json:"object"`
		Created     int64           `json:"created"`
		Model       string          `json:"model"`
		Fingerprint string          `json:"system_fingerprint,omitempty"`
		Choices     []choice        `json:"choices"`
		Usage       json.RawMessage `json:"usage,omitempty"`
	}{ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model, Fingerprint: a.fingerprint, Usage: a.usage, Choices: []choice{}}
	for _, idx := range sortedKeys(a.choices) {
		st := a.choices[idx]
		c := choice{Index: idx, Message: message{Role: st.role}}
		if c.Message.Role == "" {
			c.Message.Role = "assistant"
		}
		if st.content.Len() > 0 || len(st.toolCalls) == 0 {
			s := st.content.String()
			c.Message.Content = &s
		}
		if st.refusal.Len() > 0 {
			s := st.refusal.String()
			c.Message.Refusal = &s
		}
		if st.reasoning.Len() > 0 {
			s := st.reasoning.String()
			c.Message.ReasoningContent = &s
		}
		if st.finish != "" {
			f := st.finish
			c.FinishReason = &f
		}
		for _, ti := range sortedKeys(st.toolCalls) {
			t := st.toolCalls[ti]
			tc := toolCall{ID: t.id, Type: t.typ}
			if tc.Type == "" {
				tc.Type = "function"
			}
			tc.Function.Name, tc.Function.Arguments = t.name, t.args.String()
			c.Message.ToolCalls = append(c.Message.ToolCalls, tc)
		}
		out.Choices = append(out.Choices, c)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, "could not assemble the streamed response: " + err.Error()
	}
	return b, a.note()
}

// Anthropic message events → message.

type anthropicAssembler struct {
	budget
	message map[string]json.RawMessage
	blocks  map[int]*anthropicBlock
	delta   map[string]json.RawMessage // message_delta.delta (stop_reason, ...)
	usage   map[string]json.RawMessage
}

type anthropicBlock struct {
	fields    map[string]json.RawMessage
	text      strings.Builder
	json      strings.Builder
	thinking  strings.Builder
	signature strings.Builder
}

type anthropicEvent struct {
	Type         string                     `json:"type"`
	Index        int                        `json:"index"`
	Message      map[string]json.RawMessage `json:"message"`
	ContentBlock map[string]json.RawMessage `json:"content_block"`
	Delta        map[string]json.RawMessage `json:"delta"`
	Usage        map[string]json.RawMessage `json:"usage"`
}

func (a *anthropicAssembler) observe(_ string, data []byte) {
	var e anthropicEvent
	if data[0] != '{' || json.Unmarshal(data, &e) != nil {
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
			a.blocks = map[int]*anthropicBlock{}
		}
		a.blocks[e.Index] = &anthropicBlock{fields: a.keepFields(e.ContentBlock)}
	case "content_block_delta":
		b := a.blocks[e.Index]
		if b == nil {
			return
		}
		str := func(k string) string {
			var s string
			_ = json.Unmarshal(e.Delta[k], &s)
			return s
		}
		switch str("type") {
		case "text_delta":
			a.add(&b.text, str("text"))
		case "input_json_delta":
			a.add(&b.json, str("partial_json"))
		case "thinking_delta":
			a.add(&b.thinking, str("thinking"))
		case "signature_delta":
			a.add(&b.signature, str("signature"))
		}
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

// keepFields counts a whole object (a message_start message, a content
// block as it started) against the budget; past it only the object's type
// is kept.
func (a *anthropicAssembler) keepFields(f map[string]json.RawMessage) map[string]json.RawMessage {
	n := 0
	for k, v := range f {
		n += len(k) + len(v)
	}
	if a.used+n > maxAssembledBytes {
		a.truncated = true
		kept := map[string]json.RawMessage{}
		if t, ok := f["type"]; ok && len(t) <= 64 {
			kept["type"] = t
		}
		return kept
	}
	a.used += n
	return f
}

func (a *anthropicAssembler) result() (json.RawMessage, string) {
	msg := map[string]json.RawMessage{}
	for k, v := range a.message {
		msg[k] = v
	}
	blocks := make([]map[string]json.RawMessage, 0, len(a.blocks))
	for _, i := range sortedKeys(a.blocks) {
		b := a.blocks[i]
		f := map[string]json.RawMessage{}
		for k, v := range b.fields {
			f[k] = v
		}
		var typ string
		_ = json.Unmarshal(f["type"], &typ)
		switch typ {
		case "text":
			f["text"] = mustString(b.text.String())
		case "thinking":
			f["thinking"] = mustString(b.thinking.String())
			f["signature"] = mustString(b.signature.String())
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
	return b, a.note()
}

func mustString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
