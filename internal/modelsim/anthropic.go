package modelsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/wire"
)

// The Anthropic messages request, reduced to what matching needs.
type anRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type anBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// anBlocks reads content that is a string or an array of blocks.
func anBlocks(raw json.RawMessage) ([]anBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []anBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, errors.New("content must be a string or an array of content blocks")
	}
	return bs, nil
}

func anText(bs []anBlock) string {
	var texts []string
	for _, b := range bs {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// decodeAnthropic reads a messages body into a Conversation.
func decodeAnthropic(body []byte) (*Conversation, error) {
	var req anRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("invalid messages request: %w", err)
	}
	if len(req.Messages) == 0 {
		return nil, errors.New("invalid messages request: messages is empty")
	}
	c := &Conversation{Format: FormatAnthropic, Model: req.Model, Stream: req.Stream, Messages: len(req.Messages)}
	for _, t := range req.Tools {
		if t.Name != "" {
			c.Tools = append(c.Tools, t.Name)
		}
	}
	sys, err := anBlocks(req.System)
	if err != nil {
		return nil, fmt.Errorf("invalid messages request: system: %w", err)
	}
	c.System = anText(sys)
	if c.System != "" {
		c.allText = append(c.allText, c.System)
	}

	callNames := map[string]string{} // tool_use id -> tool name
	for i, m := range req.Messages {
		bs, err := anBlocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("invalid messages request: message %d: %w", i, err)
		}
		if t := anText(bs); t != "" {
			c.allText = append(c.allText, t)
			if m.Role == "user" {
				c.LastUserText = t
			}
		}
		last := i == len(req.Messages)-1
		for _, b := range bs {
			switch b.Type {
			case "tool_use":
				callNames[b.ID] = b.Name
			case "tool_result":
				inner, err := anBlocks(b.Content)
				if err != nil {
					return nil, fmt.Errorf("invalid messages request: tool_result %s: %w", b.ToolUseID, err)
				}
				text := anText(inner)
				c.allText = append(c.allText, text)
				if last && m.Role == "user" {
					c.ToolResults = append(c.ToolResults, ToolResult{ID: b.ToolUseID, Name: callNames[b.ToolUseID], Content: text, IsError: b.IsError})
				}
			}
		}
	}
	return c, nil
}

type anUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// anContent is an output content block.
type anContent struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anMessage struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []anContent `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        anUsage     `json:"usage"`
}

func anStop(a answer) string {
	if len(a.Calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func anContents(a answer) []anContent {
	var out []anContent
	if a.Text != "" {
		out = append(out, anContent{Type: "text", Text: &a.Text})
	}
	for _, c := range a.Calls {
		out = append(out, anContent{Type: "tool_use", ID: c.ID, Name: c.Name, Input: c.Args})
	}
	return out
}

// writeAnthropic writes a message object.
func writeAnthropic(w http.ResponseWriter, a answer) {
	stop := anStop(a)
	writeJSON(w, http.StatusOK, anMessage{
		ID: a.ID, Type: "message", Role: "assistant", Model: a.Model,
		Content: anContents(a), StopReason: &stop,
		Usage: anUsage{InputTokens: a.Usage.InputTokens, OutputTokens: a.Usage.OutputTokens},
	})
}

// anEvent is one streaming event; fields appear in the order Anthropic
// sends them, "type" first.
type anEvent struct {
	Type         string     `json:"type"`
	Message      *anMessage `json:"message,omitempty"`
	Index        *int       `json:"index,omitempty"`
	ContentBlock *anContent `json:"content_block,omitempty"`
	Delta        any        `json:"delta,omitempty"`
	Usage        *anOutUse  `json:"usage,omitempty"`
}

type anOutUse struct {
	OutputTokens int `json:"output_tokens"`
}

type anTextDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type anStopDelta struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// streamAnthropic writes the messages event sequence: message_start, ping,
// one content block per text or tool call (start, deltas, stop),
// message_delta with the stop reason and output usage, message_stop.
func streamAnthropic(sw *sse.Writer, a answer) error {
	send := func(e anEvent) error {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return sw.Event(sse.Event{Name: e.Type, Data: b})
	}
	start := anMessage{ID: a.ID, Type: "message", Role: "assistant", Model: a.Model, Content: []anContent{},
		Usage: anUsage{InputTokens: a.Usage.InputTokens, OutputTokens: 1}}
	if err := send(anEvent{Type: "message_start", Message: &start}); err != nil {
		return err
	}
	if err := send(anEvent{Type: "ping"}); err != nil {
		return err
	}
	for i, block := range anContents(a) {
		var deltas []any
		switch block.Type {
		case "text":
			text := *block.Text
			empty := ""
			block.Text = &empty
			for _, p := range wire.ChunkText(text, 24) {
				deltas = append(deltas, anTextDelta{"text_delta", p})
			}
		case "tool_use":
			args := string(block.Input)
			block.Input = json.RawMessage("{}")
			for _, p := range wire.ChunkText(args, 16) {
				deltas = append(deltas, anJSONDelta{"input_json_delta", p})
			}
		}
		if err := send(anEvent{Type: "content_block_start", Index: &i, ContentBlock: &block}); err != nil {
			return err
		}
		for _, d := range deltas {
			if err := send(anEvent{Type: "content_block_delta", Index: &i, Delta: d}); err != nil {
				return err
			}
		}
		if err := send(anEvent{Type: "content_block_stop", Index: &i}); err != nil {
			return err
		}
	}
	if err := send(anEvent{Type: "message_delta", Delta: anStopDelta{StopReason: anStop(a)}, Usage: &anOutUse{a.Usage.OutputTokens}}); err != nil {
		return err
	}
	return send(anEvent{Type: "message_stop"})
}

// writeAnthropicError writes Anthropic's error shape.
func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	if typ == "" {
		typ = "invalid_request_error"
	}
	type body struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	writeJSON(w, status, struct {
		Type  string `json:"type"`
		Error body   `json:"error"`
	}{"error", body{typ, msg}})
}
