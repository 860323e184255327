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

// stored is a response the server keeps.
type stored struct {
	body   json.RawMessage
	input  []json.RawMessage
	output []json.RawMessage
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
		prev := s.storedResponse(req.Previous)
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
		case "reasoning":
			c.ReasoningItems++
			if it.Encrypted != nil && *it.Encrypted != "" {
				c.EncryptedReasoningItems++
			} else if !rt.store && !s.knownItem(it.ID) {
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
		c.allText = append(c.allText, text)
		c.ToolResults = append([]ToolResult{{ID: it.CallID, Name: callNames[it.CallID], Content: text}}, c.ToolResults...)
	}
	return c, nil
}

// storedResponse returns a kept response, or nil.
func (s *Server) storedResponse(id string) *stored {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored[id]
}

// knownItem reports whether a kept response produced the item id.
func (s *Server) knownItem(id string) bool {
	if id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stored {
		for _, raw := range st.output {
			var it respItem
			if json.Unmarshal(raw, &it) == nil && it.ID == id {
				return true
			}
		}
	}
	return false
}

// keep stores a response, dropping the oldest beyond KeepRequests.
func (s *Server) keep(id string, st *stored) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored == nil {
		s.stored = map[string]*stored{}
	}
	if _, ok := s.stored[id]; !ok {
		s.storedOrder = append(s.storedOrder, id)
	}
	s.stored[id] = st
	for len(s.storedOrder) > s.opts.KeepRequests {
		delete(s.stored, s.storedOrder[0])
		s.storedOrder = s.storedOrder[1:]
	}
}

// forget drops a kept response; it reports whether there was one.
func (s *Server) forget(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.stored[id]; !ok {
		return false
	}
	delete(s.stored, id)
	for i, v := range s.storedOrder {
		if v == id {
			s.storedOrder = append(s.storedOrder[:i], s.storedOrder[i+1:]...)
			break
		}
	}
	return true
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

// responseObject builds the response for a, with its output items, and
// stores it when the request allows.
func (s *Server) responseObject(c *Conversation, a answer, created time.Time) (map[string]any, []json.RawMessage) {
	rt := c.resp
	var output []json.RawMessage
	if len(rt.req.Reasoning) > 0 && string(rt.req.Reasoning) != "null" {
		item := map[string]any{"type": "reasoning", "id": s.ids.next("rs_sim"), "summary": []any{}}
		for _, inc := range rt.req.Include {
			if inc == "reasoning.encrypted_content" {
				item["encrypted_content"] = "sim-encrypted:" + item["id"].(string)
			}
		}
		output = append(output, mustMarshal(item))
	}
	if a.Text != "" || len(a.Calls) == 0 {
		output = append(output, mustMarshal(map[string]any{"type": "message", "id": s.ids.next("msg_sim"), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": a.Text, "annotations": []any{}}}}))
	}
	for _, call := range a.Calls {
		output = append(output, mustMarshal(map[string]any{"type": "function_call", "id": s.ids.next("fc_sim"), "call_id": call.ID,
			"name": call.Name, "arguments": string(call.Args), "status": "completed"}))
	}
	var prev any
	if rt.req.Previous != "" {
		prev = rt.req.Previous
	}
	obj := map[string]any{
		"id": a.ID, "object": "response", "created_at": created.Unix(), "status": "completed", "model": a.Model,
		"output": output, "instructions": orDefault(rt.req.Instructions, "null"), "tools": orDefault(rt.req.Tools, "[]"),
		"tool_choice": orDefault(rt.req.ToolChoice, `"auto"`), "parallel_tool_calls": orDefault(rt.req.Parallel, "true"),
		"store": rt.store, "previous_response_id": prev, "text": map[string]any{"format": map[string]string{"type": "text"}},
		"error": nil, "incomplete_details": nil, "metadata": map[string]any{}, "temperature": 1, "top_p": 1,
		"usage": map[string]any{"input_tokens": a.Usage.InputTokens, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": a.Usage.OutputTokens, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
			"total_tokens": a.Usage.InputTokens + a.Usage.OutputTokens},
	}
	if rt.store {
		s.keep(a.ID, &stored{body: mustMarshal(obj), input: rt.input, output: output})
	}
	return obj, output
}

// writeResponses writes a response object.
func (s *Server) writeResponses(w http.ResponseWriter, c *Conversation, a answer, created time.Time) {
	obj, _ := s.responseObject(c, a, created)
	writeJSON(w, http.StatusOK, obj)
}

// streamResponses writes one response lifecycle: response.created and
// response.in_progress, each output item's added, delta and done events,
// and response.completed with the whole response.
func (s *Server) streamResponses(sw *sse.Writer, c *Conversation, a answer, created time.Time) error {
	obj, output := s.responseObject(c, a, created)
	seq := 0
	emit := func(typ string, fields map[string]any) error {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		b, err := json.Marshal(fields)
		if err != nil {
			return err
		}
		return sw.Event(sse.Event{Name: typ, Data: b})
	}
	pending := map[string]any{}
	for k, v := range obj {
		pending[k] = v
	}
	pending["status"], pending["output"], pending["usage"] = "in_progress", []any{}, nil
	if err := emit("response.created", map[string]any{"response": pending}); err != nil {
		return err
	}
	if err := emit("response.in_progress", map[string]any{"response": pending}); err != nil {
		return err
	}
	for i, raw := range output {
		var item map[string]any
		if err := json.Unmarshal(raw, &item); err != nil {
			return err
		}
		id, _ := item["id"].(string)
		head := map[string]any{}
		for k, v := range item {
			head[k] = v
		}
		switch item["type"] {
		case "message":
			head["status"], head["content"] = "in_progress", []any{}
		case "function_call":
			head["status"], head["arguments"] = "in_progress", ""
		}
		if err := emit("response.output_item.added", map[string]any{"output_index": i, "item": head}); err != nil {
			return err
		}
		switch item["type"] {
		case "message":
			text := a.Text
			at := map[string]any{"item_id": id, "output_index": i, "content_index": 0}
			with := func(k string, v any) map[string]any {
				m := map[string]any{k: v}
				for kk, vv := range at {
					m[kk] = vv
				}
				return m
			}
			if err := emit("response.content_part.added", with("part", map[string]any{"type": "output_text", "text": "", "annotations": []any{}})); err != nil {
				return err
			}
			for _, p := range wire.ChunkText(text, 24) {
				ev := with("delta", p)
				ev["logprobs"] = []any{}
				if err := emit("response.output_text.delta", ev); err != nil {
					return err
				}
			}
			done := with("text", text)
			done["logprobs"] = []any{}
			if err := emit("response.output_text.done", done); err != nil {
				return err
			}
			if err := emit("response.content_part.done", with("part", map[string]any{"type": "output_text", "text": text, "annotations": []any{}})); err != nil {
				return err
			}
		case "function_call":
			args, _ := item["arguments"].(string)
			for _, p := range wire.ChunkText(args, 16) {
				if err := emit("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": p}); err != nil {
					return err
				}
			}
			if err := emit("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args, "name": item["name"]}); err != nil {
				return err
			}
		}
		if err := emit("response.output_item.done", map[string]any{"output_index": i, "item": json.RawMessage(raw)}); err != nil {
			return err
		}
	}
	return emit("response.completed", map[string]any{"response": obj})
}

// serveStored answers GET and DELETE /v1/responses/{id} and GET
// /v1/responses/{id}/input_items.
func (s *Server) serveStored(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec := Record{Time: s.opts.Now().UTC(), Path: r.URL.Path, Auth: authHeaders(r), Status: http.StatusOK}
	defer func() { s.record(rec) }()
	st := s.storedResponse(id)
	if st == nil {
		rec.Status, rec.Error = http.StatusNotFound, "no such response"
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", fmt.Sprintf("Response with id '%s' not found.", id))
		return
	}
	switch {
	case r.Method == http.MethodDelete:
		s.forget(id)
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
	case strings.HasSuffix(r.URL.Path, "/input_items"):
		data := make([]json.RawMessage, 0, len(st.input))
		for i, raw := range st.input {
			var item map[string]json.RawMessage
			if json.Unmarshal(raw, &item) != nil || item == nil {
				continue
			}
			if _, ok := item["id"]; !ok {
				item["id"] = mustMarshal(fmt.Sprintf("item_%s_%d", id, i))
			}
			if _, ok := item["type"]; !ok {
				item["type"] = json.RawMessage(`"message"`)
			}
			data = append(data, mustMarshal(item))
		}
		list := map[string]any{"object": "list", "data": data, "has_more": false, "first_id": nil, "last_id": nil}
		if len(data) > 0 {
			var first, last struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(data[0], &first)
			_ = json.Unmarshal(data[len(data)-1], &last)
			list["first_id"], list["last_id"] = first.ID, last.ID
		}
		writeJSON(w, http.StatusOK, list)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(st.body, '\n'))
	}
}
