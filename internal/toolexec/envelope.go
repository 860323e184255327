// Package toolexec runs one managed tool call: it validates the arguments
// against the tool's inputSchema, fills path placeholders, calls the service
// over HTTP or MCP with the projected credential and a timeout, and returns
// the result as an Envelope bounded to the policy's size. It knows nothing
// of model formats or rounds (internal/mediate does).
package toolexec

import (
	"context"
	"encoding/json"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// Envelope is the structured result the model sees for every managed call
// (spec 000 "Structured tool error feedback" and truncation shape).
type Envelope struct {
	OK   bool            `json:"ok"`
	Data json.RawMessage `json:"data,omitempty"`
	// Truncated is set when Data was cut to the policy's
	// max_tool_result_bytes. Then OriginalBytes is the true size, or, when
	// cllama stopped reading an over-long answer before its end (and no
	// Content-Length declared it), OriginalBytesAtLeast is the bytes it
	// counted: one of the two is set, never a size that was not measured.
	Truncated            bool `json:"truncated,omitempty"`
	OriginalBytes        int  `json:"original_bytes,omitempty"`
	OriginalBytesAtLeast int  `json:"original_bytes_at_least,omitempty"`
	// ResultHandle, on a truncated result, names the whole result kept by
	// cllama: the built-in tool claw.read_result pages and searches it
	// (internal/resultstore). Note says what the model should know of it
	// (a result over cllama's absolute bound was kept only in part).
	ResultHandle string `json:"result_handle,omitempty"`
	Note         string `json:"note,omitempty"`
	Error        *Error `json:"error,omitempty"`
}

// Error is a failed call's reason.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RPCCode is the JSON-RPC code where one applies (-32602 invalid
	// arguments, -32014 timeout; CKP Tool validation rules).
	RPCCode int `json:"rpc_code,omitempty"`
}

// Error codes.
const (
	CodeInvalidArguments = "invalid_arguments"
	CodeTimeout          = "timeout"
	CodeUnknownTool      = "unknown_tool"
	CodeServiceError     = "service_error" // non-2xx from the service
	CodeUnavailable      = "unavailable"   // connection failure
	CodeToolError        = "tool_error"    // MCP isError result
	CodeDuplicate        = "duplicate_tool_call"
	CodeRejected         = "tool_call_rejected" // ownership rule
	CodeCanceled         = "canceled"
	CodeTooManyCalls     = "too_many_tool_calls" // max_tool_calls_per_round/_per_turn
	// CodeWrongMode: the tool is granted to the agent, but in the other
	// mode (a native tool called through the model loop, a mediated tool
	// called on /mcp). Not executed.
	CodeWrongMode = "wrong_mode"
	// CodePolicyDenied: the tool's grant conditions (tools.json rules)
	// do not hold now. Not executed.
	CodePolicyDenied = "policy_denied"
)

// JSON-RPC codes.
const (
	RPCInvalidParams = -32602
	RPCTimeout       = -32014
)

// Fail builds a failed envelope.
func Fail(code, message string, rpc int) Envelope {
	return Envelope{OK: false, Error: &Error{Code: code, Message: message, RPCCode: rpc}}
}

// Call is one managed call to execute.
type Call struct {
	// AgentID is the authenticated agent; it fills {claw_id}.
	AgentID string
	Tool    *manifest.Tool
	// Arguments is the model's arguments object (raw JSON).
	Arguments json.RawMessage
	// Timeout bounds this call (the policy's per-tool timeout unless the
	// tool's own timeout_ms overrides it).
	Timeout time.Duration
	// MaxResultBytes bounds Envelope.Data.
	MaxResultBytes int
	// Auth overrides the tool's execution auth when non-nil (a projected
	// service-auth credential).
	Auth *manifest.Auth
}

// Runner executes calls. Implementations are safe for concurrent use.
type Runner interface {
	Run(ctx context.Context, c Call) Envelope
}

// Bounded is a Runner that knows which of its calls return by their
// context's deadline whatever the service does: the caller may run those
// on its own goroutine instead of guarding each with another.
type Bounded interface {
	Bounded(c Call) bool
}
