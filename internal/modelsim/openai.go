package modelsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/wire"
)

// The OpenAI chat completions request, reduced to what matching needs.
type oaRequest struct {
	Model    string      `json:"model"`
	Messages []oaMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	// Functions is the legacy tool list.
	Functions []struct {
		Name string `json:"name"`
	} `json:"functions"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type oaMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

// decodeOpenAI reads a chat completions body into a Conversation.
func decodeOpenAI(body []byte) (*Conversation, error) {
	var req oaRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("invalid chat completions request: %w", err)
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("invalid chat completions request: messages is empty")
	}
	c := &Conversation{Format: FormatOpenAI, Model: req.Model, Stream: req.Stream, Messages: len(req.Messages)}
	c.IncludeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	for _, t := range req.Tools {
		if t.Function.Name != "" {
			c.Tools = append(c.Tools, t.Function.Name)
		}
	}
	for _, f := range req.Functions {
		c.Tools = append(c.Tools, f.Name)
	}

	callNames := map[string]string{} // tool_call id -> function name
	var system []string
	for _, m := range req.Messages {
		text, err := openAIText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("invalid chat completions request: %s message: %w", m.Role, err)
		}
		if text != "" {
			c.allText = append(c.allText, text)
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			if text != "" {
				c.LastUserText = text
			}
		case "assistant":
			for _, tc := range m.ToolCalls {
				callNames[tc.ID] = tc.Function.Name
			}
		}
	}
	c.System = strings.Join(system, "\n\n")

	// Parallel results arrive as consecutive tool messages at the end.
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "tool" && m.Role != "function" {
			break
		}
		text, _ := openAIText(m.Content)
		name := callNames[m.ToolCallID]
		if m.Role == "function" {
			name = m.Name
		}
		c.ToolResults = append([]ToolResult{{ID: m.ToolCallID, Name: name, Content: text}}, c.ToolResults...)
	}
	return c, nil
}

// openAIText flattens message content: a string, null, or an array of parts
// of which only text parts count (chat completions "text"; Responses
// "input_text", and "output_text" in assistant messages).
func openAIText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string, null or an array of parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" || p.Type == "input_text" || p.Type == "output_text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

type oaUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type oaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type oaToolCall struct {
	Index    *int       `json:"index,omitempty"`
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

func oaUsageOf(u Usage) oaUsage {
	return oaUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

func oaFinish(a answer) string {
	if len(a.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// writeOpenAI writes a chat.completion object.
func writeOpenAI(w http.ResponseWriter, a answer, created time.Time) {
	type message struct {
		Role      string       `json:"role"`
		Content   *string      `json:"content"`
		Refusal   *string      `json:"refusal"`
		ToolCalls []oaToolCall `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int             `json:"index"`
		Message      message         `json:"message"`
		FinishReason string          `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	}
	msg := message{Role: "assistant"}
	if a.Text != "" || len(a.Calls) == 0 {
		msg.Content = &a.Text
	}
	for _, c := range a.Calls {
		msg.ToolCalls = append(msg.ToolCalls, oaToolCall{ID: c.ID, Type: "function", Function: oaFunction{Name: c.Name, Arguments: string(c.Args)}})
	}
	writeJSON(w, http.StatusOK, struct {
		ID      string   `json:"id"`
		Object  string   `json:"object"`
		Created int64    `json:"created"`
		Model   string   `json:"model"`
		Choices []choice `json:"choices"`
		Usage   oaUsage  `json:"usage"`
	}{a.ID, "chat.completion", created.Unix(), a.Model, []choice{{Message: msg, FinishReason: oaFinish(a), Logprobs: json.RawMessage("null")}}, oaUsageOf(a.Usage)})
}

type oaDelta struct {
	Role      string       `json:"role,omitempty"`
	Content   *string      `json:"content,omitempty"`
	ToolCalls []oaToolCall `json:"tool_calls,omitempty"`
}

type oaChunkChoice struct {
	Index        int     `json:"index"`
	Delta        oaDelta `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type oaChunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []oaChunkChoice `json:"choices"`
	Usage   *oaUsage        `json:"usage,omitempty"`
}

// streamOpenAI writes chat.completion.chunk events: the role, text deltas,
// tool calls (name first, then argument fragments, as OpenAI does), the
// finish reason, a usage chunk when asked for, and [DONE].
func streamOpenAI(sw *sse.Writer, a answer, includeUsage bool, created time.Time) error {
	chunk := func(d oaDelta, finish *string) oaChunk {
		return oaChunk{ID: a.ID, Object: "chat.completion.chunk", Created: created.Unix(), Model: a.Model,
			Choices: []oaChunkChoice{{Delta: d, FinishReason: finish}}}
	}
	var events []oaChunk
	empty := ""
	events = append(events, chunk(oaDelta{Role: "assistant", Content: &empty}, nil))
	for _, p := range wire.ChunkText(a.Text, 24) {
		events = append(events, chunk(oaDelta{Content: &p}, nil))
	}
	for i, c := range a.Calls {
		idx := i
		events = append(events, chunk(oaDelta{ToolCalls: []oaToolCall{{Index: &idx, ID: c.ID, Type: "function", Function: oaFunction{Name: c.Name}}}}, nil))
		for _, p := range wire.ChunkText(string(c.Args), 16) {
			events = append(events, chunk(oaDelta{ToolCalls: []oaToolCall{{Index: &idx, Function: oaFunction{Arguments: p}}}}, nil))
		}
	}
	finish := oaFinish(a)
	events = append(events, chunk(oaDelta{}, &finish))
	if includeUsage {
		u := oaUsageOf(a.Usage)
		events = append(events, oaChunk{ID: a.ID, Object: "chat.completion.chunk", Created: created.Unix(), Model: a.Model, Choices: []oaChunkChoice{}, Usage: &u})
	}
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if err := sw.Event(sse.Event{Data: b}); err != nil {
			return err
		}
	}
	return sw.Event(sse.Event{Data: []byte("[DONE]")})
}

// writeOpenAIError writes OpenAI's error shape.
func writeOpenAIError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeOpenAIErrorParam(w, status, typ, code, "", msg)
}

// writeOpenAIErrorParam is writeOpenAIError naming the request member at
// fault (param; null when empty).
func writeOpenAIErrorParam(w http.ResponseWriter, status int, typ, code, param, msg string) {
	if typ == "" {
		typ = "invalid_request_error"
	}
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: msg, Type: typ}
	if param != "" {
		b.Param = &param
	}
	if code != "" {
		b.Code = &code
	}
	writeJSON(w, status, struct {
		Error body `json:"error"`
	}{b})
}
