// Package apierror writes the errors cllama itself produces in the format of
// the endpoint the runner called, so official SDK clients parse them as
// ordinary API errors:
//
//	OpenAI    (POST /v1/chat/completions): {"error":{"message","type","param":null,"code":null}}
//	Anthropic (POST /v1/messages):         {"type":"error","error":{"type","message"}}
//
// It is a leaf package (it imports only exchange and sse) so the mediation
// loop can use it without importing internal/proxy. Upstream errors are not
// rewritten: the proxy relays those as they came.
package apierror

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/sse"
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
	TypeOverloaded      = "overloaded_error"      // 503
	TypeManifest        = "manifest_error"        // 500: the agent's compiled manifest is broken
	TypeUpstream        = "upstream_error"        // 502: the provider could not be reached
	TypeUpstreamStream  = "upstream_stream_error" // in-band: the provider's stream broke
	TypeToolMediation   = "tool_mediation_error"  // 502: the managed-tool loop failed
	TypeBudgetExhausted = "tool_budget_exhausted" // 502: a mediation budget ran out
)

// Body returns the JSON error body for format.
func Body(format exchange.Format, errType, msg string) []byte {
	var v any
	if format == exchange.Anthropic {
		v = anthropicError{Type: "error", Error: errorObject{Type: errType, Message: msg}}
	} else {
		v = openAIError{Error: openAIObject{Message: msg, Type: errType}}
	}
	// No HTML escaping: messages quote "<provider>/<model>" and should read
	// as written in every client's error text.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings only: cannot fail
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Write writes status and the error body for format. Call it before anything
// else was written to w.
func Write(w http.ResponseWriter, format exchange.Format, status int, errType, msg string) {
	b := Body(format, errType, msg)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// StreamEvent returns the in-band error event for a stream already under
// way, when a status can no longer be sent. Both official SDKs surface it as
// an error: openai-go on any data object with an "error" key, the Anthropic
// SDK on an event named "error".
func StreamEvent(format exchange.Format, errType, msg string) sse.Event {
	if format == exchange.Anthropic {
		return sse.Event{Name: "error", Data: Body(format, errType, msg)}
	}
	return sse.Event{Data: Body(format, errType, msg)}
}

type errorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type anthropicError struct {
	Type  string      `json:"type"`
	Error errorObject `json:"error"`
}

type openAIObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type openAIError struct {
	Error openAIObject `json:"error"`
}
