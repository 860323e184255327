package modelsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The Responses API (POST /v1/responses): requests are input items, answers
// are output items, and the server keeps what it answered (unless the
// request says store:false) so a later request can continue from it with
// previous_response_id, and GET/DELETE /v1/responses/{id} and
// /input_items can read it back, as OpenAI's API does.

// respRequest is a Responses request, reduced to what the simulator needs.
type respRequest struct {
	Model        string          `json:"model"`
	Input        json.RawMessage `json:"input"`
	Instructions json.RawMessage `json:"instructions"`
	Tools        json.RawMessage `json:"tools"`
	ToolChoice   json.RawMessage `json:"tool_choice"`
	Parallel     json.RawMessage `json:"parallel_tool_calls"`
	Stream       bool            `json:"stream"`
	Store        *bool           `json:"store"`
	Previous     string          `json:"previous_response_id"`
	Include      []string        `json:"include"`
	Reasoning    json.RawMessage `json:"reasoning"`
	// Echoed in the response as given.
	Text            json.RawMessage `json:"text"`
	Metadata        json.RawMessage `json:"metadata"`
	MaxOutputTokens json.RawMessage `json:"max_output_tokens"`
}

// respItem is the part of an input item the simulator reads.
type respItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Output    json.RawMessage `json:"output"`
	Encrypted *string         `json:"encrypted_content"`
}

// respTurn is what the answer to a Responses request needs beyond the
// Conversation.
type respTurn struct {
	req   respRequest
	input []json.RawMessage // the effective input: previous turns included
	store bool
}

// apiError is a request the simulator refuses as the real API would.
type apiError struct {
	status           int
	typ, code, param string
	msg              string
}

func (e *apiError) Error() string { return e.msg }

// decodeResponses reads a Responses body into a Conversation, expanding
// previous_response_id into the stored conversation it continues.
func (s *Server) decodeResponses(body []byte) (*Conversation, error) {
	var req respRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("invalid responses request: %w", err)
	}
	var items []json.RawMessage
	switch {
	case len(req.Input) == 0 || string(req.Input) == "null":
	case req.Input[0] == '"':
		var text string
		if err := json.Unmarshal(req.Input, &text); err != nil {
			return nil, fmt.Errorf("invalid responses request: input: %w", err)
		}
		items = []json.RawMessage{mustMarshal(map[string]string{"role": "user", "content": text})}
	default:
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return nil, fmt.Errorf("invalid responses request: input must be a string or an array of items: %w", err)
		}
	}
	rt := &respTurn{req: req, store: req.Store == nil || *req.Store}
	if req.Previous != "" {
		prev := s.kept.get(req.Previous)
		if prev == nil {
			return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "previous_response_not_found", param: "previous_response_id",
				msg: fmt.Sprintf("Previous response with id '%s' not found.", req.Previous)}
		}
		rt.input = append(append(append(rt.input, prev.input...), prev.output...), items...)
	} else {
		rt.input = items
	}
	if len(rt.input) == 0 {
		return nil, errors.New("invalid responses request: input is empty")
	}
	c := &Conversation{Format: FormatResponses, Model: req.Model, Stream: req.Stream, Messages: len(rt.input),
		PreviousResponseID: req.Previous, Store: req.Store, resp: rt}
	var tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		if err := json.Unmarshal(req.Tools, &tools); err != nil {
			return nil, fmt.Errorf("invalid responses request: tools: %w", err)
		}
	}
	for _, t := range tools {
		if (t.Type == "function" || t.Type == "custom") && t.Name != "" {
			c.Tools = append(c.Tools, t.Name)
		}
	}
	var system []string
	if len(req.Instructions) > 0 && string(req.Instructions) != "null" {
		var in string
		if json.Unmarshal(req.Instructions, &in) == nil && in != "" {
			system = append(system, in)
			c.allText = append(c.allText, in)
		}
	}
	callNames := map[string]string{}
	parsed := make([]respItem, len(rt.input))
	for i, raw := range rt.input {
		it := &parsed[i]
		if err := json.Unmarshal(raw, it); err != nil {
			return nil, fmt.Errorf("invalid responses request: input[%d]: %w", i, err)
		}
		switch it.Type {
		case "", "message":
			text, err := openAIText(it.Content)
			if err != nil {
				return nil, fmt.Errorf("invalid responses request: input[%d]: %w", i, err)
			}
			if text != "" {
				c.allText = append(c.allText, text)
			}
			switch it.Role {
			case "system", "developer":
				system = append(system, text)
			case "user":
				if text != "" {
					c.LastUserText = text
				}
			}
		case "function_call", "custom_tool_call":
			callNames[it.CallID] = it.Name
		case "function_call_output", "custom_tool_call_output":
			if text, _ := openAIText(it.Output); text != "" {
				c.allText = append(c.allText, text)
			}
		case "reasoning":
			c.ReasoningItems++
			if it.Encrypted != nil && *it.Encrypted != "" {
				c.EncryptedReasoningItems++
			} else if !rt.store && !s.kept.hasItem(it.ID) {
				return nil, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "input",
					msg: fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", it.ID)}
			}
		}
	}
	c.System = strings.Join(system, "\n\n")
	// The results of the last calls are the trailing run of output items.
	for i := len(parsed) - 1; i >= 0; i-- {
		it := parsed[i]
		if it.Type != "function_call_output" && it.Type != "custom_tool_call_output" {
			break
		}
		text, _ := openAIText(it.Output)
		c.ToolResults = append([]ToolResult{{ID: it.CallID, Name: callNames[it.CallID], Content: text}}, c.ToolResults...)
	}
	return c, nil
}

func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// orDefault is raw, or def when raw is absent or null.
func orDefault(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(def)
	}
	return raw
}
