// Package history owns session history: one JSON line per completed exchange
// in <dir>/<agent-id>/history.jsonl (spec 000 "Session history", extended
// with tool_trace and status). This file holds the entry schema shared by
// cllama (writer) and claw (reader).
package history

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/audit"
	"time"
)

// Entry is one history line.
type Entry struct {
	// ID is unique per entry and stable: it is written once and never changes.
	ID        string    `json:"id"`
	Timestamp time.Time `json:"timestamp"`
	AgentID   string    `json:"agent_id"`
	Pod       string    `json:"pod,omitempty"`
	// Format is the API format's registry name: "openai", "anthropic" or
	// "responses"; "mcp" for a native call on cllama's MCP endpoint.
	Format string `json:"format"`
	// Model is the model as the runner named it ("<provider>/<model>").
	Model      string `json:"model"`
	Stream     bool   `json:"stream,omitempty"`
	Status     string `json:"status"` // "ok" or "error"
	StatusCode int    `json:"status_code"`
	LatencyMS  int64  `json:"latency_ms"`
	// Request is the runner's request body as received.
	Request json.RawMessage `json:"request"`
	// Response is the final response body (for streams, the assembled
	// non-streaming equivalent).
	Response json.RawMessage `json:"response,omitempty"`
	Usage    Usage           `json:"usage"`
	// CostUSD is what the exchange's model calls cost in US dollars (a
	// mediated turn's total over every round); null with CostUnknown
	// when the model has no price; absent when no model was called.
	CostUSD     audit.Cost `json:"cost_usd,omitzero"`
	CostUnknown bool       `json:"cost_unknown,omitempty"`
	ToolTrace   []Round    `json:"tool_trace,omitempty"`
	// PolicyFiltered are the tools this exchange did not offer because
	// their grant conditions did not hold (see audit.Filtered).
	PolicyFiltered []audit.Filtered `json:"policy_filtered,omitempty"`
	Error          string           `json:"error,omitempty"`
	// UTF8Replaced counts the bytes of the exchange that were not valid
	// UTF-8 (in the request or response as received, the tool trace or
	// any other field) and were written as U+FFFD instead: a history line
	// is always valid UTF-8, and says when it is not byte for byte what
	// was exchanged.
	UTF8Replaced int `json:"utf8_replaced,omitempty"`
	// BodiesValid tells the writer that Request and Response are valid
	// JSON already (the proxy validated the request at its edge and
	// renders or checks every response): it need not check them again.
	// Never written.
	BodiesValid bool `json:"-"`
	// RequestPlain tells the writer that Request is ASCII with no raw CR
	// or LF (the proxy's edge learned it in the pass that validated the
	// request): valid UTF-8 on one line, so it is written as it is
	// without being scanned again. Never written.
	RequestPlain bool `json:"-"`
}

// FormatMCP is the Format of a native call's entry: one tools/call on
// cllama's MCP endpoint, no model exchange.
const FormatMCP = "mcp"

// Status values.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// Usage aggregates all model calls of the exchange (the runner's bill).
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalRounds      int `json:"total_rounds,omitempty"`
}

// Round is one hidden managed-tool round.
type Round struct {
	Round      int        `json:"round"`
	ToolCalls  []ToolCall `json:"tool_calls"`
	RoundUsage Usage      `json:"round_usage"`
	// CostUSD is what the round's model call cost (see Entry.CostUSD).
	CostUSD audit.Cost `json:"cost_usd,omitzero"`
}

// ToolCall is one managed call of a round, with its result envelope.
type ToolCall struct {
	// Name is canonical: "<service>.<tool>".
	Name string `json:"name"`
	// Arguments are the arguments as the call was executed: claw_id
	// forced to the calling agent, other spellings of it dropped.
	Arguments json.RawMessage `json:"arguments"`
	// ModelArguments are the arguments as the model wrote them, present
	// only when cllama executed something else.
	ModelArguments json.RawMessage `json:"model_arguments,omitempty"`
	Result         json.RawMessage `json:"result"`
	// StartMS is when the call started, in milliseconds from its round's
	// start (the model's response arriving); with LatencyMS it shows which
	// calls of a round overlapped. Absent on native calls and on entries
	// written before it existed.
	StartMS   *int64 `json:"start_ms,omitempty"`
	LatencyMS int64  `json:"latency_ms"`
	Service   string `json:"service"`
	// Mode is "mediated" (a call of the model that cllama ran in its tool
	// loop) or "native" (the runner's MCP client called it on /mcp; the
	// entry is then that one call).
	Mode string `json:"mode,omitempty"`
	// DuplicateOfRound and DuplicateCount are set on a repeated call that
	// was not executed again.
	DuplicateOfRound int `json:"duplicate_of_round,omitempty"`
	DuplicateCount   int `json:"duplicate_count,omitempty"`
	// Approval is set on a call held for a person's decision.
	Approval *Approval `json:"approval,omitempty"`
}

// Approval is a held call's approval request: its id, how it ended
// (approved, denied, timeout, cancelled, lost) and by whom.
type Approval struct {
	ID       string `json:"id"`
	Decision string `json:"decision"`
	By       string `json:"by,omitempty"`
}
