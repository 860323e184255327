package openai

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// NewAssembler implements wire.StreamAssembling: chat.completion.chunk
// events become the chat.completion they stand for.
func (Format) NewAssembler() wire.Assembler {
	return &assembler{choices: map[int]*asmChoice{}}
}

type assembler struct {
	wire.AssemblyBudget
	id, model, fingerprint string
	created                int64
	choices                map[int]*asmChoice
	usage                  json.RawMessage
	// chunk is decoded into for each event (nothing of it is kept from
	// one event to the next), so a stream does not allocate one per event.
	chunk asmChunk
}

type asmChoice struct {
	role, finish string
	content      strings.Builder
	refusal      strings.Builder
	reasoning    strings.Builder
	toolCalls    map[int]*asmToolCall
}

type asmToolCall struct {
	id, typ, name string
	args          strings.Builder
}

type asmChunk struct {
	ID          string           `json:"id"`
	Model       string           `json:"model"`
	Created     int64            `json:"created"`
	Fingerprint string           `json:"system_fingerprint"`
	Usage       json.RawMessage  `json:"usage"`
	Choices     []asmChunkChoice `json:"choices"`
	// What the assembler asks of the fast path (encoding/json, where a
	// chunk goes to it, decodes everything): skipMeta leaves id, model and
	// system_fingerprint undecoded (the assembler has them from the first
	// chunk); literals keeps each delta text as its string literal (the
	// deltas' *Lit) for the assembler to append without a string between.
	skipMeta, literals bool
}

type asmChunkChoice struct {
	Index        int      `json:"index"`
	FinishReason *string  `json:"finish_reason"`
	Delta        asmDelta `json:"delta"`
}

type asmDelta struct {
	Role             string            `json:"role"`
	Content          *string           `json:"content"`
	Refusal          *string           `json:"refusal"`
	ReasoningContent *string           `json:"reasoning_content"`
	ToolCalls        []asmToolCallPart `json:"tool_calls"`
	// The texts as string literals, in place of the three above, where
	// the fast path decoded the chunk with asmChunk.literals.
	contentLit, refusalLit, reasoningLit []byte
}

type asmToolCallPart struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (a *assembler) Observe(_ string, data []byte) {
	c := &a.chunk
	*c = asmChunk{Choices: c.Choices[:0], skipMeta: a.id != "", literals: true}
	if data[0] != '{' || !decodeChunk(data, c) {
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
			st = &asmChoice{toolCalls: map[int]*asmToolCall{}}
			a.choices[ch.Index] = st
		}
		if ch.Delta.Role != "" {
			st.role = ch.Delta.Role
		}
		a.addText(&st.content, ch.Delta.contentLit, ch.Delta.Content)
		a.addText(&st.refusal, ch.Delta.refusalLit, ch.Delta.Refusal)
		a.addText(&st.reasoning, ch.Delta.reasoningLit, ch.Delta.ReasoningContent)
		if ch.FinishReason != nil {
			st.finish = *ch.FinishReason
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index > 1024 {
				continue
			}
			t := st.toolCalls[tc.Index]
			if t == nil {
				t = &asmToolCall{}
				st.toolCalls[tc.Index] = t
			}
			if tc.ID != "" {
				t.id = a.Keep(t.id, tc.ID)
			}
			if tc.Type != "" {
				t.typ = a.Keep(t.typ, tc.Type)
			}
			if tc.Function.Name != "" {
				t.name = a.Keep(t.name, tc.Function.Name)
			}
			a.Add(&t.args, tc.Function.Arguments)
		}
	}
}

// addText appends a delta's text, given as a string literal (the fast
// path) or decoded (encoding/json), to sb.
func (a *assembler) addText(sb *strings.Builder, lit []byte, s *string) {
	switch {
	case lit != nil:
		a.AddLiteral(sb, lit)
	case s != nil:
		a.Add(sb, *s)
	}
}

func (a *assembler) Result() (json.RawMessage, string) {
	if b, ok := a.appendResult(); ok {
		return b, a.Note()
	}
	return a.marshalResult()
}

// appendResult writes the assembled chat.completion by hand, as
// marshalResult's encoding/json does, byte for byte (FuzzAssembleResult
// holds the two together): every streamed exchange with history on ends
// with one. false: a usage object encoding/json would rewrite (spaces,
// HTML characters, anything not ASCII); marshalResult then writes it.
func (a *assembler) appendResult() ([]byte, bool) {
	if len(a.usage) > 0 && !plainRaw(a.usage) {
		return nil, false
	}
	b := make([]byte, 0, 256+a.Used)
	b = jsontop.AppendString(append(b, `{"id":`...), a.id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, a.created, 10)
	b = jsontop.AppendString(append(b, `,"model":`...), a.model)
	if a.fingerprint != "" {
		b = jsontop.AppendString(append(b, `,"system_fingerprint":`...), a.fingerprint)
	}
	b = append(b, `,"choices":[`...)
	for n, idx := range wire.SortedKeys(a.choices) {
		st := a.choices[idx]
		if n > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, `{"index":`...), int64(idx), 10)
		role := st.role
		if role == "" {
			role = "assistant"
		}
		b = jsontop.AppendString(append(b, `,"message":{"role":`...), role)
		b = append(b, `,"content":`...)
		if st.content.Len() > 0 || len(st.toolCalls) == 0 {
			b = jsontop.AppendString(b, st.content.String())
		} else {
			b = append(b, "null"...)
		}
		if st.refusal.Len() > 0 {
			b = jsontop.AppendString(append(b, `,"refusal":`...), st.refusal.String())
		}
		if st.reasoning.Len() > 0 {
			b = jsontop.AppendString(append(b, `,"reasoning_content":`...), st.reasoning.String())
		}
		if len(st.toolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for m, ti := range wire.SortedKeys(st.toolCalls) {
				t := st.toolCalls[ti]
				if m > 0 {
					b = append(b, ',')
				}
				typ := t.typ
				if typ == "" {
					typ = "function"
				}
				b = jsontop.AppendString(append(b, `{"id":`...), t.id)
				b = jsontop.AppendString(append(b, `,"type":`...), typ)
				b = jsontop.AppendString(append(b, `,"function":{"name":`...), t.name)
				b = jsontop.AppendString(append(b, `,"arguments":`...), t.args.String())
				b = append(b, "}}"...)
			}
			b = append(b, ']')
		}
		b = append(b, `},"finish_reason":`...)
		if st.finish != "" {
			b = jsontop.AppendString(b, st.finish)
		} else {
			b = append(b, "null"...)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(a.usage) > 0 {
		b = append(append(b, `,"usage":`...), a.usage...)
	}
	return append(b, '}'), true
}

// plainRaw reports whether encoding/json would write the JSON raw as it
// is (as a json.RawMessage): valid, ASCII, and without whitespace or HTML
// characters to compact or escape.
func plainRaw(raw []byte) bool {
	for _, c := range raw {
		if c <= ' ' || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return jsontop.Valid(raw)
}

// marshalResult is Result with encoding/json, for any assembly.
func (a *assembler) marshalResult() (json.RawMessage, string) {
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
	for _, idx := range wire.SortedKeys(a.choices) {
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
		for _, ti := range wire.SortedKeys(st.toolCalls) {
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
	return b, a.Note()
}
