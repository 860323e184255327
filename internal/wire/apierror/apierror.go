// Package apierror writes the errors cllama itself produces in the format of
// the endpoint the runner called, so official SDK clients parse them as
// ordinary API errors. The shapes are each format's (wire.Format ErrorBody
// and ErrorEvent); this package holds the error types they carry and the
// one way they are written, for the edge and the mediation loop alike.
// Upstream errors are not rewritten: the proxy relays those as they came.
package apierror

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/wire"
)

// Error types. The names are Anthropic's; OpenAI uses the same strings for
// the ones it has, and clients of both treat the type as informational.
const (
	TypeInvalidRequest  = "invalid_request_error" // 400, 404, 405
	TypeAuthentication  = "authentication_error"  // 401
	TypePermission      = "permission_error"      // 403
	TypeNotFound        = "not_found_error"       // 404
	TypeRequestTooLarge = "request_too_large"     // 413
	TypeAPI             = "api_error"             // 500, 502, in-band stream errors
	TypeTimeout         = "timeout_error"         // 504
	TypeOverloaded      = "overloaded_error"      // 503, 529
	TypeRateLimit       = "rate_limit_error"      // 429
	TypeManifest        = "manifest_error"        // 500: the agent's compiled manifest is broken
	TypeUpstream        = "upstream_error"        // 502: the provider could not be reached
	TypeUpstreamStream  = "upstream_stream_error" // in-band: the provider's stream broke
	TypeToolMediation   = "tool_mediation_error"  // 502: the managed-tool loop failed
	TypeBudgetExhausted = "tool_budget_exhausted" // 502: a mediation budget ran out
)

// Write writes status and f's error body. Call it before anything else
// was written to w.
func Write(w http.ResponseWriter, f wire.Format, status int, errType, msg string) {
	b := f.ErrorBody(errType, msg)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// StreamEvent returns f's in-band error event for a stream already under
// way, when a status can no longer be sent.
func StreamEvent(f wire.Format, errType, msg string) sse.Event {
	e := f.ErrorEvent(errType, msg)
	return sse.Event{Name: e.Name, Data: e.Data}
}

// WriteFields is Write with more members in the error object (beside
// type and message): what a refusal says about itself, such as a
// budget's scope, limit and reset.
func WriteFields(w http.ResponseWriter, f wire.Format, status int, errType, msg string, fields map[string]any) {
	b := WithFields(f.ErrorBody(errType, msg), fields)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// StreamEventFields is StreamEvent with more members in the error object.
func StreamEventFields(f wire.Format, errType, msg string, fields map[string]any) sse.Event {
	e := f.ErrorEvent(errType, msg)
	return sse.Event{Name: e.Name, Data: WithFields(e.Data, fields)}
}

// WithFields adds fields to an error body or event: into its "error"
// object when it has one, else at its top level. Members already there
// are kept.
func WithFields(body []byte, fields map[string]any) []byte {
	if len(fields) == 0 {
		return body
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body
	}
	target := top
	var inner map[string]json.RawMessage
	if raw, ok := top["error"]; ok && json.Unmarshal(raw, &inner) == nil && inner != nil {
		target = inner
	}
	for k, v := range fields {
		if _, ok := target[k]; ok {
			continue
		}
		if b, err := json.Marshal(v); err == nil {
			target[k] = b
		}
	}
	if inner != nil {
		b, err := json.Marshal(inner)
		if err != nil {
			return body
		}
		top["error"] = b
	}
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}
