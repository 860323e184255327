// Package responses is the OpenAI Responses API wire format
// (POST /v1/responses) behind the wire interfaces.
//
// A Responses conversation is a list of items rather than messages: a
// response's output is reasoning, message and call items side by side, and
// the runner sends them back as input items (or names the response with
// previous_response_id and sends only what is new). So an assistant turn
// is several items, and reasoning and provider-run tool items are prelude
// items (wire.RolePrelude): kept with the answer they lead into, left out
// of continuity keys.
package responses

import (
	"bytes"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/openai"
)

// Name is the format's registry key.
const Name = "responses"

// Format implements the wire interfaces for the Responses API.
type Format struct{}

// New returns the Responses format.
func New() Format { return Format{} }

// The format's abilities.
var (
	_ wire.ToolLoop         = Format{}
	_ wire.FeedInjector     = Format{}
	_ wire.StreamAssembling = Format{}
	_ wire.Stored           = Format{}
)

// Name implements wire.Format.
func (Format) Name() string { return Name }

// Endpoint implements wire.Format.
func (Format) Endpoint() wire.Endpoint {
	return wire.Endpoint{Route: "/v1/responses", Upstream: "/responses"}
}

// ErrorBody implements wire.Format: the Responses API answers errors in the
// shape of the rest of OpenAI's API.
func (Format) ErrorBody(errType, msg string) []byte { return openai.New().ErrorBody(errType, msg) }

// ErrorEvent implements wire.Format: the stream's "error" event,
// {"type":"error","code","message","param","sequence_number"}, which the
// official SDKs decode as the stream's error.
func (Format) ErrorEvent(errType, msg string) wire.Event {
	b, _ := wire.MarshalUnescaped(struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
		Seq     int     `json:"sequence_number"`
	}{"error", errType, msg, nil, 0}) // strings only: cannot fail
	return wire.Event{Name: "error", Data: b}
}

// usageFields is the Responses usage object: input_tokens include cached
// ones and output_tokens reasoning ones, as in chat completions.
type usageFields struct {
	Input        *int `json:"input_tokens"`
	Output       *int `json:"output_tokens"`
	InputDetails *struct {
		Cached int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputDetails *struct {
		Reasoning int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// readUsage merges the usage object raw into u, reporting whether it
// carried any count.
func readUsage(raw []byte, u *wire.Usage) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false // absent, or null
	}
	var f usageFields
	if json.Unmarshal(raw, &f) != nil {
		return false
	}
	found := false
	if f.Input != nil {
		u.Input, found = *f.Input, true
	}
	if f.Output != nil {
		u.Output, found = *f.Output, true
	}
	if f.InputDetails != nil {
		u.CachedInput = f.InputDetails.Cached
	}
	if f.OutputDetails != nil {
		u.Reasoning = f.OutputDetails.Reasoning
	}
	return found
}

// Usage implements wire.Format: the response's top-level usage member.
func (Format) Usage(body []byte) (wire.Usage, bool) { return wire.UsageMember(body, readUsage) }

// Stream event types the relay acts on.
const (
	evCreated    = "response.created"
	evCompleted  = "response.completed"
	evFailed     = "response.failed"
	evIncomplete = "response.incomplete"
	evItemDone   = "response.output_item.done"
)

// actedOn are the event types the relay or the assembler acts on.
var actedOn = [...]string{evCreated, evCompleted, evFailed, evIncomplete, evItemDone}

var usageKey = []byte(`"usage"`)

// eventType is an event's type: its SSE name, which OpenAI always sends,
// else the "type" member of its data. A type written without escapes
// that is none of actedOn comes back as "": it runs on every event, and
// the deltas need no string of their own.
func eventType(name string, data []byte) string {
	if name != "" {
		return name
	}
	raw, _ := jsontop.Find(data, "type")
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		for _, t := range actedOn {
			if string(raw[1:n-1]) == t {
				return t
			}
		}
		return ""
	}
	t, _ := wire.String(raw)
	return t
}

// ObserveStream implements wire.Format. A stream is one response's
// lifecycle: response.created announces the response (its id is the
// stored object), response.completed, .incomplete or .failed ends it and
// carries the whole response, usage included; an "error" event is the
// provider's own error.
func (Format) ObserveStream(st wire.StreamState, name string, data []byte) wire.StreamState {
	if st, isErr := st.ErrorEvent(name, data); isErr {
		return st
	}
	switch eventType(name, data) {
	case evCreated:
		if resp, ok := jsontop.Find(data, "response"); ok {
			st.CreatedID = Format{}.CreatedID(resp)
		}
	case evCompleted, evIncomplete, evFailed:
		st.Terminal = true
		resp, _ := jsontop.Find(data, "response")
		if jsontop.IndexKey(resp, usageKey) >= 0 {
			raw, _ := jsontop.Find(resp, "usage")
			st.HaveUsage = readUsage(raw, &st.Usage) || st.HaveUsage
		}
		if name == evFailed || eventType(name, data) == evFailed {
			st.UpstreamError = string(data[:min(len(data), 512)])
		}
	}
	return st
}

// ObjectRoutes implements wire.Stored.
func (Format) ObjectRoutes() []wire.ObjectRoute {
	return []wire.ObjectRoute{
		{Method: "GET", Route: "/v1/responses/{id}", Upstream: "/responses/{id}"},
		{Method: "DELETE", Route: "/v1/responses/{id}", Upstream: "/responses/{id}"},
		{Method: "GET", Route: "/v1/responses/{id}/input_items", Upstream: "/responses/{id}/input_items"},
		{Method: "POST", Route: "/v1/responses/{id}/cancel", Upstream: "/responses/{id}/cancel"},
	}
}

// CreatedID implements wire.Stored: the response's top-level id, unless
// the response says the provider did not store it (store:false).
func (Format) CreatedID(body []byte) string {
	if raw, ok := jsontop.Find(body, "store"); ok && string(raw) == "false" {
		return ""
	}
	raw, _ := jsontop.Find(body, "id")
	id, _ := wire.String(raw)
	return id
}

// Continues implements wire.Stored: previous_response_id.
func (Format) Continues(body []byte) string {
	raw, _ := jsontop.Find(body, continuesMember)
	id, _ := wire.String(raw)
	return id
}

// continuesMember is the request member that continues a stored response.
const continuesMember = "previous_response_id"

// ContinuesMember implements wire.Stored.
func (Format) ContinuesMember() string { return continuesMember }
