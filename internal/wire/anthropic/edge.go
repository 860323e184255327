package anthropic

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// Name is the format's registry key.
const Name = "anthropic"

// Name implements wire.Format.
func (Format) Name() string { return Name }

// Endpoint implements wire.Format.
func (Format) Endpoint() wire.Endpoint {
	return wire.Endpoint{Route: "/v1/messages", Upstream: "/messages"}
}

// NativeProvider implements wire.NativeProvider: a bare model on
// /v1/messages goes to the pod's "anthropic" provider, as it does through
// the reference proxy.
func (Format) NativeProvider() string { return Name }

// CountTokens is POST /v1/messages/count_tokens (wire.TokenCounter).
func (Format) CountTokens() wire.Endpoint {
	return wire.Endpoint{Route: "/v1/messages/count_tokens", Upstream: "/messages/count_tokens"}
}

type errorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ErrorBody implements wire.Format: {"type":"error","error":{"type","message"}}.
func (Format) ErrorBody(errType, msg string) []byte {
	b, _ := wire.MarshalUnescaped(struct {
		Type  string      `json:"type"`
		Error errorObject `json:"error"`
	}{"error", errorObject{Type: errType, Message: msg}}) // strings only: cannot fail
	return b
}

// ErrorEvent implements wire.Format: the error body as an event named
// "error", which the Anthropic SDK raises.
func (f Format) ErrorEvent(errType, msg string) wire.Event {
	return wire.Event{Name: "error", Data: f.ErrorBody(errType, msg)}
}

var (
	usageKey   = []byte(`"usage"`)
	stopReason = []byte(`"stop_reason"`)
)

// usageFields is the usage object. Cached prompt tokens are reported apart
// from input_tokens; they are set together with it, so an event that
// restates input_tokens restates the whole prompt (wire.Usage.Prompt adds
// them back).
type usageFields struct {
	Input         *int `json:"input_tokens"`
	Output        *int `json:"output_tokens"`
	CacheCreation *int `json:"cache_creation_input_tokens"`
	CacheRead     *int `json:"cache_read_input_tokens"`
}

// readUsage merges the usage object raw into u, reporting whether it
// carried any count. Counts that are absent leave u alone, which is what
// the cumulative usage of message_delta needs (it may omit input tokens).
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
		u.Input, u.CacheCreation, u.CacheRead, found = *f.Input, deref(f.CacheCreation), deref(f.CacheRead), true
	}
	if f.Output != nil {
		u.Output, found = *f.Output, true
	}
	return found
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// Usage implements wire.Format: the top-level usage member.
func (Format) Usage(body []byte) (wire.Usage, bool) { return wire.UsageMember(body, readUsage) }

// ObserveStream implements wire.Format. message_start carries
// message.usage and every message_delta the cumulative usage so far; the
// stream ends with message_stop, or, for providers that close without it,
// after a message_delta with a stop_reason.
func (Format) ObserveStream(st wire.StreamState, name string, data []byte) wire.StreamState {
	if jsontop.IndexKey(data, usageKey) >= 0 {
		if msg, ok := jsontop.Find(data, "message"); ok { // message_start
			raw, _ := jsontop.Find(msg, "usage")
			st.HaveUsage = readUsage(raw, &st.Usage) || st.HaveUsage
		}
		raw, _ := jsontop.Find(data, "usage")
		st.HaveUsage = readUsage(raw, &st.Usage) || st.HaveUsage
	}
	if st, isErr := st.ErrorEvent(name, data); isErr {
		return st
	}
	switch name {
	case "message_stop":
		st.Terminal = true
	case "message_delta":
		st.Stopped = st.Stopped || jsontop.HasStringMember(data, stopReason)
	}
	return st
}
