// Package apierror writes the errors cllama itself produces in the format of
// the endpoint the runner called, so official SDK clients parse them as
// ordinary API errors. The shapes are each format's (wire.Format ErrorBody
// and ErrorEvent); this package holds the error types they carry and the
// one way they are written, for the edge and the mediation loop alike.
// Upstream errors are not rewritten: the proxy relays those as they came.
package apierror

import (
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
