package openai

import (
	"bytes"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
)

// Name is the format's registry key.
const Name = "openai"

// Name implements wire.Format.
func (Format) Name() string { return Name }

// Endpoint implements wire.Format.
func (Format) Endpoint() wire.Endpoint {
	return wire.Endpoint{Route: "/v1/chat/completions", Upstream: "/chat/completions"}
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// ErrorBody implements wire.Format:
// {"error":{"message","type","param":null,"code":null}}. A rate limit
// carries OpenAI's own code, rate_limit_exceeded, which clients match on.
func (Format) ErrorBody(errType, msg string) []byte {
	e := errorObject{Message: msg, Type: errType}
	if errType == "rate_limit_error" || errType == "requests" || errType == "tokens" {
		code := "rate_limit_exceeded"
		e.Code = &code
	}
	b, _ := wire.MarshalUnescaped(struct {
		Error errorObject `json:"error"`
	}{e}) // strings only: cannot fail
	return b
}

// ErrorEvent implements wire.Format: the error body as an unnamed data
// event, which openai-go raises for any data object with an "error" key.
func (f Format) ErrorEvent(errType, msg string) wire.Event {
	return wire.Event{Data: f.ErrorBody(errType, msg)}
}

var (
	usageKey     = []byte(`"usage"`)
	doneData     = []byte("[DONE]")
	finishReason = []byte(`"finish_reason"`)
)

// usageFields is the usage object: prompt_tokens already include cached
// ones (prompt_tokens_details.cached_tokens), so they are Input whole.
type usageFields struct {
	Prompt        *int          `json:"prompt_tokens"`
	Completion    *int          `json:"completion_tokens"`
	PromptDetails *usageDetails `json:"prompt_tokens_details"`
}

// usageDetails is prompt_tokens_details: the prompt tokens read from the
// provider's cache (priced apart, counted in prompt_tokens).
type usageDetails struct {
	Cached int `json:"cached_tokens"`
}

// readUsage merges the usage object raw into u, reporting whether it
// carried any count. Finding the member first (package jsontop) and
// decoding only it costs a fraction of decoding the document.
func readUsage(raw []byte, u *wire.Usage) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false // absent, or null
	}
	var f usageFields
	if !fastUsage(raw, &f) {
		f = usageFields{}
		if json.Unmarshal(raw, &f) != nil {
			return false
		}
	}
	found := false
	if f.Prompt != nil {
		u.Input, found = *f.Prompt, true
	}
	if f.Completion != nil {
		u.Output, found = *f.Completion, true
	}
	if f.PromptDetails != nil {
		u.CachedInput = f.PromptDetails.Cached
	}
	return found
}

var usageKeys = []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details"}

// fastUsage decodes a usage object as encoding/json would, without
// reflection (every response and stream has one), in one pass that checks
// it as it goes; false: leave it to encoding/json.
func fastUsage(raw []byte, f *usageFields) bool {
	end, ok := jsontop.ValidMembers(raw, 0, 1, usageKeys, func(k, s int) (int, bool) {
		end, ok := jsontop.ValidValue(raw, s, 1)
		if !ok {
			return end, false
		}
		if k == 2 {
			return end, json.Unmarshal(raw[s:end], &f.PromptDetails) == nil
		}
		p := &f.Prompt
		if k == 1 {
			p = &f.Completion
		}
		if raw[s] == 'n' {
			*p = nil
			return end, true
		}
		var n int
		if !jsontop.DecodeInt(raw[s:end], &n) {
			return end, false
		}
		*p = &n
		return end, true
	})
	return ok && jsontop.SkipSpace(raw, end) == len(raw)
}

// Usage implements wire.Format: the top-level usage member.
func (Format) Usage(body []byte) (wire.Usage, bool) { return wire.UsageMember(body, readUsage) }

// ObserveStream implements wire.Format. Usage comes in the last chunk when
// the runner asked for stream_options.include_usage; the stream ends with
// "data: [DONE]", or, for providers that close without it, after a chunk
// with a finish_reason.
func (Format) ObserveStream(st wire.StreamState, name string, data []byte) wire.StreamState {
	if jsontop.IndexKey(data, usageKey) >= 0 {
		raw, _ := jsontop.Find(data, "usage")
		st.HaveUsage = readUsage(raw, &st.Usage) || st.HaveUsage
	}
	if st, isErr := st.ErrorEvent(name, data); isErr {
		return st
	}
	if bytes.Equal(bytes.TrimSpace(data), doneData) {
		st.Terminal = true
		return st
	}
	st.Stopped = st.Stopped || jsontop.HasStringMember(data, finishReason)
	return st
}
