// Package usage reads token usage out of model responses of both API formats,
// JSON bodies and SSE streams alike, for the audit trail and session history.
// It recognises the fields by name, so one reader serves both formats:
//
//   - OpenAI chat completions: usage.prompt_tokens / usage.completion_tokens,
//     in the body or, when streaming with stream_options.include_usage, in
//     the last chunk.
//   - Anthropic messages: usage.input_tokens / usage.output_tokens in the body;
//     streaming, message_start carries message.usage and every message_delta
//     carries the cumulative usage so far.
//
// Anthropic reports cached prompt tokens apart from input_tokens; In adds
// cache_creation_input_tokens and cache_read_input_tokens back in, so In means
// "prompt tokens billed" in both formats (OpenAI's prompt_tokens already
// includes cached ones). The package never holds a stream: Stream looks at
// one event at a time.
package usage

import (
	"bytes"
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// Usage is a token count pair.
type Usage struct {
	In  int // prompt / input tokens, cached ones included
	Out int // completion / output tokens
}

// fields covers the usage object of both formats.
type fields struct {
	PromptTokens     *int `json:"prompt_tokens"`
	CompletionTokens *int `json:"completion_tokens"`
	InputTokens      *int `json:"input_tokens"`
	OutputTokens     *int `json:"output_tokens"`
	CacheCreation    *int `json:"cache_creation_input_tokens"`
	CacheRead        *int `json:"cache_read_input_tokens"`
}

// apply merges f into u, reporting whether f carried any count. Fields that
// are absent leave u alone, which is what Anthropic's cumulative
// message_delta needs (it may omit input tokens).
func (f *fields) apply(u *Usage) bool {
	if f == nil {
		return false
	}
	found := false
	if f.PromptTokens != nil {
		u.In, found = *f.PromptTokens, true
	}
	if f.CompletionTokens != nil {
		u.Out, found = *f.CompletionTokens, true
	}
	if f.InputTokens != nil {
		u.In, found = *f.InputTokens+deref(f.CacheCreation)+deref(f.CacheRead), true
	}
	if f.OutputTokens != nil {
		u.Out, found = *f.OutputTokens, true
	}
	return found
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

var usageKey = []byte(`"usage"`)

// decode reads a usage object into u. Finding the member first (package
// jsontop) and decoding only it costs a fraction of decoding the document.
func decode(raw []byte, u *Usage) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false // absent, or null
	}
	var f fields
	return json.Unmarshal(raw, &f) == nil && f.apply(u)
}

// FromJSON returns the usage of a non-streaming response body of either
// format. ok is false when the body carries no usage (or is not JSON).
func FromJSON(body []byte) (u Usage, ok bool) {
	if !bytes.Contains(body, usageKey) {
		return Usage{}, false
	}
	raw, _ := jsontop.Find(body, "usage")
	if !decode(raw, &u) {
		return Usage{}, false
	}
	return u, true
}

// Stream accumulates usage over the events of one stream. The zero value is
// ready to use. It is not safe for concurrent use.
type Stream struct {
	u  Usage
	ok bool
}

// Observe looks at one event's data. Events that do not mention usage are
// skipped after one scan; others have only their usage member decoded.
func (s *Stream) Observe(data []byte) {
	if !bytes.Contains(data, usageKey) {
		return
	}
	if msg, ok := jsontop.Find(data, "message"); ok { // Anthropic message_start
		raw, _ := jsontop.Find(msg, "usage")
		s.ok = decode(raw, &s.u) || s.ok
	}
	raw, _ := jsontop.Find(data, "usage")
	s.ok = decode(raw, &s.u) || s.ok
}

// Usage returns the counts seen so far; ok is false when no event carried
// usage.
func (s *Stream) Usage() (Usage, bool) { return s.u, s.ok }
