package modelsim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/wire"
)

// respObject is a response object, its fields in the order the API sends
// them. The request's settings come back as given, or as the API's
// defaults.
type respObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Status    string `json:"status"`
	// CompletedAt is null until the response is completed.
	CompletedAt        *int64          `json:"completed_at"`
	Error              any             `json:"error"`
	IncompleteDetails  any             `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    json.RawMessage `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []any           `json:"output"`
	ParallelToolCalls  json.RawMessage `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Store              bool            `json:"store"`
	Temperature        float64         `json:"temperature"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	TopP               float64         `json:"top_p"`
	// Usage is null until the response is completed.
	Usage    *respUsage      `json:"usage"`
	Metadata json.RawMessage `json:"metadata"`
}

type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// Output items.
type (
	respReasoningItem struct {
		Type             string `json:"type"`
		ID               string `json:"id"`
		Summary          []any  `json:"summary"`
		EncryptedContent string `json:"encrypted_content,omitempty"`
	}
	respMessageItem struct {
		Type    string     `json:"type"`
		ID      string     `json:"id"`
		Status  string     `json:"status"`
		Role    string     `json:"role"`
		Content []respText `json:"content"`
	}
	respText struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	respFunctionCallItem struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
)

// responseObject builds the completed response for a and keeps it when
// the request allows: a reasoning item when the request asked for
// reasoning, a message when the rule replies with text, and a function
// call per scripted tool call.
func (s *Server) responseObject(c *Conversation, a answer, created time.Time) respObject {
	rt := c.resp
	var output []any
	if len(rt.req.Reasoning) > 0 && string(rt.req.Reasoning) != "null" {
		item := respReasoningItem{Type: "reasoning", ID: s.ids.next("rs_sim"), Summary: []any{}}
		for _, inc := range rt.req.Include {
			if inc == "reasoning.encrypted_content" {
				// Opaque to the client, as the real one is.
				item.EncryptedContent = "sim-encrypted:" + item.ID
			}
		}
		output = append(output, item)
	}
	if a.Text != "" || len(a.Calls) == 0 {
		output = append(output, respMessageItem{Type: "message", ID: s.ids.next("msg_sim"), Status: "completed", Role: "assistant",
			Content: []respText{{Type: "output_text", Text: a.Text, Annotations: []any{}}}})
	}
	for _, call := range a.Calls {
		output = append(output, respFunctionCallItem{Type: "function_call", ID: s.ids.next("fc_sim"), CallID: call.ID,
			Name: call.Name, Arguments: string(call.Args), Status: "completed"})
	}
	var prev *string
	if rt.req.Previous != "" {
		prev = &rt.req.Previous
	}
	// The simulator answers at once: completed when created.
	done := created.Unix()
	usage := &respUsage{InputTokens: a.Usage.InputTokens, OutputTokens: a.Usage.OutputTokens, TotalTokens: a.Usage.InputTokens + a.Usage.OutputTokens}
	obj := respObject{
		ID: a.ID, Object: "response", CreatedAt: created.Unix(), Status: "completed", CompletedAt: &done,
		Instructions: orDefault(rt.req.Instructions, "null"), MaxOutputTokens: orDefault(rt.req.MaxOutputTokens, "null"),
		Model: a.Model, Output: output, ParallelToolCalls: orDefault(rt.req.Parallel, "true"), PreviousResponseID: prev,
		Reasoning: orDefault(rt.req.Reasoning, "null"), Store: rt.store, Temperature: 1,
		Text: orDefault(rt.req.Text, `{"format":{"type":"text"}}`), ToolChoice: orDefault(rt.req.ToolChoice, `"auto"`),
		Tools: orDefault(rt.req.Tools, "[]"), TopP: 1, Usage: usage, Metadata: orDefault(rt.req.Metadata, "{}"),
	}
	if rt.store {
		items := make([]json.RawMessage, len(output))
		for i, item := range output {
			items[i] = mustMarshal(item)
		}
		s.kept.add(a.ID, &stored{body: mustMarshal(obj), input: s.withIDs(rt.input), output: items})
	}
	return obj
}

// writeResponses writes a response object.
func (s *Server) writeResponses(w http.ResponseWriter, c *Conversation, a answer, created time.Time) {
	writeJSON(w, http.StatusOK, s.responseObject(c, a, created))
}

// Where a streamed delta belongs.
type (
	respItemAt struct {
		ItemID      string `json:"item_id"`
		OutputIndex int    `json:"output_index"`
	}
	respPartAt struct {
		respItemAt
		ContentIndex int `json:"content_index"`
	}
)

// respItemEvent is response.output_item.added or .done.
type respItemEvent struct {
	OutputIndex int `json:"output_index"`
	Item        any `json:"item"`
}

// respStream writes one response's events, numbering them.
type respStream struct {
	sw  *sse.Writer
	seq int
}

// send writes an event: type and sequence_number first, as the API sends
// them, then the fields of body, which marshals to a JSON object.
func (rs *respStream) send(typ string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	data := append([]byte(`{"type":`), mustMarshal(typ)...)
	data = strconv.AppendInt(append(data, `,"sequence_number":`...), int64(rs.seq), 10)
	if len(b) > 2 {
		data = append(append(data, ','), b[1:]...)
	} else {
		data = append(data, '}')
	}
	rs.seq++
	return rs.sw.Event(sse.Event{Name: typ, Data: data})
}

// streamResponses writes one response lifecycle: response.created and
// response.in_progress with the response still empty, each output item's
// added, delta and done events, and response.completed with the whole
// response.
func (s *Server) streamResponses(sw *sse.Writer, c *Conversation, a answer, created time.Time) error {
	obj := s.responseObject(c, a, created)
	rs := &respStream{sw: sw}
	type withResponse struct {
		Response respObject `json:"response"`
	}
	pending := obj
	pending.Status, pending.CompletedAt, pending.Output, pending.Usage = "in_progress", nil, []any{}, nil
	if err := rs.send("response.created", withResponse{pending}); err != nil {
		return err
	}
	if err := rs.send("response.in_progress", withResponse{pending}); err != nil {
		return err
	}
	for i, item := range obj.Output {
		var err error
		switch it := item.(type) {
		case respMessageItem:
			err = rs.message(i, it)
		case respFunctionCallItem:
			err = rs.functionCall(i, it)
		default:
			err = rs.send("response.output_item.added", respItemEvent{i, item})
		}
		if err != nil {
			return err
		}
		if err := rs.send("response.output_item.done", respItemEvent{i, item}); err != nil {
			return err
		}
	}
	return rs.send("response.completed", withResponse{obj})
}

// message streams a message item's text, up to its output_item.done.
func (rs *respStream) message(i int, m respMessageItem) error {
	head := m
	head.Status, head.Content = "in_progress", []respText{}
	if err := rs.send("response.output_item.added", respItemEvent{i, head}); err != nil {
		return err
	}
	at := respPartAt{respItemAt{m.ID, i}, 0}
	type withPart struct {
		respPartAt
		Part respText `json:"part"`
	}
	text := m.Content[0].Text
	if err := rs.send("response.content_part.added", withPart{at, respText{Type: "output_text", Annotations: []any{}}}); err != nil {
		return err
	}
	for _, p := range wire.ChunkText(text, pieceSize(len(text), 24)) {
		if err := rs.send("response.output_text.delta", struct {
			respPartAt
			Delta    string `json:"delta"`
			Logprobs []any  `json:"logprobs"`
		}{at, p, []any{}}); err != nil {
			return err
		}
	}
	if err := rs.send("response.output_text.done", struct {
		respPartAt
		Text     string `json:"text"`
		Logprobs []any  `json:"logprobs"`
	}{at, text, []any{}}); err != nil {
		return err
	}
	return rs.send("response.content_part.done", withPart{at, m.Content[0]})
}

// functionCall streams a function call's arguments, up to its
// output_item.done.
func (rs *respStream) functionCall(i int, fc respFunctionCallItem) error {
	head := fc
	head.Status, head.Arguments = "in_progress", ""
	if err := rs.send("response.output_item.added", respItemEvent{i, head}); err != nil {
		return err
	}
	at := respItemAt{fc.ID, i}
	for _, p := range wire.ChunkText(fc.Arguments, pieceSize(len(fc.Arguments), 16)) {
		if err := rs.send("response.function_call_arguments.delta", struct {
			respItemAt
			Delta string `json:"delta"`
		}{at, p}); err != nil {
			return err
		}
	}
	return rs.send("response.function_call_arguments.done", struct {
		respItemAt
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}{at, fc.Name, fc.Arguments})
}

// pieceSize is how many bytes of an n-byte text each delta carries: at most
// most, and few enough that anything longer than a few characters arrives
// in at least two deltas, so a client's accumulation is exercised.
func pieceSize(n, most int) int {
	return min(most, max(4, (n+1)/2))
}
