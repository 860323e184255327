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

// Error is an error cllama answers with itself: its HTTP status, its
// type, the message, and what else the error object says about itself.
// It is the one way cllama's own errors are written, before a response
// started (Write) or in-band in a stream already under way (Event).
type Error struct {
	Status  int
	Type    string
	Message string
	// Fields are more members of the error object, beside type and
	// message: what a refusal says about itself (a budget's scope, limit,
	// spent and reset).
	Fields map[string]any
	// RetryAfter, when positive, is sent as Retry-After in seconds.
	RetryAfter int
}

// New returns an Error.
func New(status int, errType, msg string) *Error {
	return &Error{Status: status, Type: errType, Message: msg}
}

func (e *Error) Error() string { return e.Message }

// Write writes the status and f's error body. Call it before anything else
// was written to w.
func (e *Error) Write(w http.ResponseWriter, f wire.Format) {
	b := withFields(f.ErrorBody(e.Type, e.Message), e.Fields)
	h := w.Header()
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	_, _ = w.Write(b)
}

// Event is f's in-band error event for a stream already under way, when a
// status can no longer be sent.
func (e *Error) Event(f wire.Format) sse.Event {
	return e.EventOf(f.ErrorEvent(e.Type, e.Message))
}

// EventOf is Event for an error event the caller's encoder made (a live
// stream's own shape), with the error's fields added.
func (e *Error) EventOf(ev wire.Event) sse.Event {
	return sse.Event{Name: ev.Name, Data: withFields(ev.Data, e.Fields)}
}

// withFields adds fields to an error body or event: into its "error"
// object when it has one, else at its top level. Members already there
// are kept.
func withFields(body []byte, fields map[string]any) []byte {
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
