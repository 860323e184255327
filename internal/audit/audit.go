// Package audit owns cllama's audit trail: one JSON object per line, one line
// per event, written to a single io.Writer (stdout in the container) so
// `docker compose logs cllama` is the audit log. It does not read or merge
// logs; `claw audit` does that.
package audit

import (
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"
)

// Event types.
const (
	TypeRequest   = "request"
	TypeResponse  = "response"
	TypeError     = "error"
	TypeToolCall  = "tool_call"
	TypeFeedFetch = "feed_fetch"
	// TypeManifestError reports an agent manifest that failed to load.
	TypeManifestError = "manifest_error"
	// TypeFileRepaired reports a partial last line (a write a crash cut
	// short, never acknowledged) that cllama cut off an append-only file
	// it opened: File, Offset (where the file now ends) and Bytes (how
	// many were cut); ClawID for an agent's session history.
	TypeFileRepaired = "file_repaired"
	// TypeBudgetWarning reports a budget's soft threshold crossed (once
	// per window); TypeBudgetExceeded a model call a budget refused.
	TypeBudgetWarning  = "budget_warning"
	TypeBudgetExceeded = "budget_exceeded"
	// TypeResultStored reports a tool result over its cap kept whole
	// behind a handle: Tool, Bytes (its size) and Handle.
	TypeResultStored = "result_stored"
	// TypeResultRead reports a read of a kept result (claw.read_result):
	// Handle, the range (Offset, Length) or the Pattern, and Bytes (the
	// result's bytes the answer held).
	TypeResultRead = "result_read"
	// TypeFallback reports one step of a fallback chain: the call for
	// FallbackFrom went to Model because of FallbackReason (StatusCode:
	// the provider's status, when it answered).
	TypeFallback = "fallback"
	// TypeApprovalRequested is a call held for a person's decision;
	// TypeApprovalDecided how its request ended (Approval.Decision:
	// approved, denied, timeout, cancelled, lost), by whom, why and after
	// how long.
	TypeApprovalRequested = "approval_requested"
	TypeApprovalDecided   = "approval_decided"
	// TypeConsoleLogin is an attempt at the console's login form (Login),
	// never the token it sent.
	TypeConsoleLogin = "console_login"
)

// Event is one audit line. Field names are stable: `claw audit` and
// operators' own tooling read them.
type Event struct {
	TS        time.Time `json:"ts"`
	ClawID    string    `json:"claw_id,omitempty"`
	Type      string    `json:"type"`
	RequestID string    `json:"request_id,omitempty"`
	// Format is the request's format, as registered (internal/wire/formats).
	Format string `json:"format,omitempty"`
	Model  string `json:"model,omitempty"`
	// Route is the method and path of a request on a stored object
	// ("GET /v1/responses/resp_1"), which is no generation: it has no
	// model.
	Route      string `json:"route,omitempty"`
	Stream     bool   `json:"stream,omitempty"`
	StatusCode int    `json:"status_code,omitempty"`
	LatencyMS  *int64 `json:"latency_ms,omitempty"`
	TokensIn   *int   `json:"tokens_in,omitempty"`
	TokensOut  *int   `json:"tokens_out,omitempty"`
	// CostUSD is what the exchange's model calls cost (a mediated turn's
	// total on its response event; the round's on a round event), null
	// with CostUnknown when the model has no price.
	CostUSD     Cost `json:"cost_usd,omitzero"`
	CostUnknown bool `json:"cost_unknown,omitempty"`
	// ManifestPresent and ToolsCount are set on every proxied request event
	// (spec 002 "Telemetry and Audit").
	ManifestPresent *bool  `json:"manifest_present,omitempty"`
	ToolsCount      *int   `json:"tools_count,omitempty"`
	Mediated        bool   `json:"mediated,omitempty"`
	Error           string `json:"error,omitempty"`

	// tool_call
	Tool    string `json:"tool,omitempty"`
	Service string `json:"service,omitempty"`
	Round   int    `json:"round,omitempty"`
	// Mode is how the tool was reached: "mediated" (cllama ran the
	// model's call in its tool loop) or "native" (the runner called it on
	// cllama's MCP endpoint, /mcp).
	Mode string `json:"mode,omitempty"`
	// Status is "ok" or an error code (tool_call), or the fetch outcome
	// (feed_fetch: "ok", "error").
	Status string `json:"status,omitempty"`

	// PolicyFiltered lists the tools a request did not offer because
	// their grant conditions (tools.json rules) did not hold, and by which
	// rules (on a mediated exchange's response or error event).
	PolicyFiltered []Filtered `json:"policy_filtered,omitempty"`

	// Timings and the error's type, for the recorder's other sinks
	// (metrics, traces); never in the audit line. Sent is how long after
	// the request's start the provider was sent it, FirstByte when its
	// response headers arrived.
	Sent      time.Duration `json:"-"`
	FirstByte time.Duration `json:"-"`
	ErrorType string        `json:"-"`

	// feed_fetch
	Feed string `json:"feed,omitempty"`
	// Bytes is the size of the feed fetched (feed_fetch), or of the
	// partial line cut off a file (file_repaired).
	Bytes  *int `json:"bytes,omitempty"`
	Cached bool `json:"cached,omitempty"`
	Stale  bool `json:"stale,omitempty"`

	// budget_warning, budget_exceeded: the budget.
	Budget *Budget `json:"budget,omitempty"`

	// file_repaired: the file and the offset it was cut at.
	File   string `json:"file,omitempty"`
	Offset *int64 `json:"offset,omitempty"`

	// result_stored, result_read: the handle, and what a read asked for.
	Handle  string `json:"handle,omitempty"`
	Length  *int64 `json:"length,omitempty"`
	Pattern string `json:"pattern,omitempty"`
	// fallback, and the response or error of an exchange a fallback
	// target answered: the "<provider>/<model>" asked first and why it
	// could not answer.
	FallbackFrom   string `json:"fallback_from,omitempty"`
	FallbackReason string `json:"fallback_reason,omitempty"`
	// Approval is set on approval_requested and approval_decided, and on
	// the tool_call of a call that was held.
	Approval *Approval `json:"approval,omitempty"`
	// Login is set on console_login.
	Login *Login `json:"login,omitempty"`
}

// Login is an attempt at the console's login form: where it came from
// (an IPv6 address by its /64), its outcome ("ok", "refused": a wrong
// token, "limited": refused unchecked after too many failures), the
// client's failures in a row, and the wait it must now keep.
type Login struct {
	Client       string `json:"client"`
	Outcome      string `json:"outcome"`
	Failures     int    `json:"failures,omitempty"`
	RetryAfterMS int64  `json:"retry_after_ms,omitempty"`
	// PodWide is set when the pod-wide limit refused the attempt.
	PodWide bool `json:"pod_wide,omitempty"`
}

// Approval is a held call's approval request in an event.
type Approval struct {
	ID string `json:"id"`
	// Rule held the call; ArgumentsSHA256 is its arguments' digest and
	// ExpiresAt when it times out (approval_requested).
	Rule            string     `json:"rule,omitempty"`
	ArgumentsSHA256 string     `json:"arguments_sha256,omitempty"`
	ExpiresAt       *time.Time `json:"expires_at,omitempty"`
	// Decision, By, Reason and WaitMS (approval_decided; Decision also on
	// the tool_call).
	Decision string `json:"decision,omitempty"`
	By       string `json:"by,omitempty"`
	Reason   string `json:"reason,omitempty"`
	WaitMS   *int64 `json:"wait_ms,omitempty"`
}

// FileRepaired is the file_repaired event of a cut: n bytes were cut off
// file at offset (agent is the history's agent, or "").
func FileRepaired(agent, file string, offset, n int64) Event {
	return Event{Type: TypeFileRepaired, ClawID: agent, File: file, Offset: &offset, Bytes: Ptr(int(n))}
}

// Budget is the budget a budget_warning or budget_exceeded event is
// about: limit and spent in US dollars for unit usd (written exactly),
// else counts; resets_at absent for windows that never reset.
type Budget struct {
	Scope    string    `json:"scope"`
	Unit     string    `json:"unit"`
	Per      string    `json:"per"`
	Limit    int64     `json:"-"`
	Spent    int64     `json:"-"`
	ResetsAt time.Time `json:"-"`
}

// MarshalJSON writes the budget with its amounts in their unit.
func (b Budget) MarshalJSON() ([]byte, error) {
	out := []byte(`{"scope":`)
	out = appendJSONString(out, b.Scope)
	out = appendJSONString(append(out, `,"unit":`...), b.Unit)
	out = appendJSONString(append(out, `,"per":`...), b.Per)
	amount := func(v int64) []byte {
		if b.Unit == "usd" {
			return AppendUSD(nil, v)
		}
		return strconv.AppendInt(nil, v, 10)
	}
	out = append(append(out, `,"limit":`...), amount(b.Limit)...)
	out = append(append(out, `,"spent":`...), amount(b.Spent)...)
	if !b.ResetsAt.IsZero() {
		out = appendJSONString(append(out, `,"resets_at":`...), b.ResetsAt.UTC().Format(time.RFC3339))
	}
	return append(out, '}'), nil
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// Filtered is a tool withheld by tool policy: the rules tried (none held)
// and the error of any that failed to evaluate (which withholds too).
type Filtered struct {
	Tool  string   `json:"tool"`
	Rules []string `json:"rules"`
	Error string   `json:"error,omitempty"`
}

// ErrorTypeRetry marks an error event that notes a retry, not an outcome.
const ErrorTypeRetry = "retry"

// Logger writes events as JSON lines. It is safe for concurrent use; each
// event is written with one Write call so lines never interleave.
type Logger struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// New returns a Logger writing to w. A nil w discards events.
func New(w io.Writer) *Logger { return &Logger{w: w, now: time.Now} }

// Emit writes e, stamping TS when it is zero.
func (l *Logger) Emit(e Event) {
	if l == nil || l.w == nil {
		return
	}
	if e.TS.IsZero() {
		e.TS = l.now().UTC()
	}
	bp := linePool.Get().(*[]byte)
	b, err := appendEvent((*bp)[:0], &e)
	if err == nil {
		b = append(b, '\n')
		l.mu.Lock()
		_, _ = l.w.Write(b)
		l.mu.Unlock()
	}
	if cap(b) <= 4<<10 { // a rare long line is left to the GC
		*bp = b
		linePool.Put(bp)
	}
}

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Ptr returns a pointer to v, for the optional numeric fields.
func Ptr[T any](v T) *T { return &v }
