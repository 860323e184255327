package recorder

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
	"go.opentelemetry.io/otel/trace"
)

// ExchangeEvent is the audit event of type typ about x, with the fields
// every event about an exchange carries (spec 002 "Telemetry and Audit":
// manifest_present, tools_count) and, past its request event, how long it
// took and which fallback target answered. Stages add what is theirs.
func ExchangeEvent(x *exchange.Exchange, typ string, now time.Time) audit.Event {
	e := audit.Event{
		Type:            typ,
		ClawID:          x.Agent.ID,
		RequestID:       x.ID,
		Format:          string(x.Format),
		Model:           x.Model,
		Stream:          x.Stream,
		ManifestPresent: boolPtr(x.Agent.Tools != nil),
		ToolsCount:      intPtr(x.Agent.ToolsCount()),
	}
	if typ == audit.TypeRequest {
		return e
	}
	if !x.Start.IsZero() {
		e.LatencyMS = audit.Ptr(now.Sub(x.Start).Milliseconds())
	}
	e.Sent, e.FirstByte = x.Timing()
	if x.FallbackFrom != "" {
		// A fallback target answered (a mediated turn's last model
		// call): the event names it.
		e.Model, e.FallbackFrom, e.FallbackReason = x.Provider+"/"+x.UpstreamModel, x.FallbackFrom, x.FallbackReason
	}
	return e
}

// Exchange is what one exchange did, reported once when it ends: by the
// edge for a request relayed to the provider, by the tool loop for a
// mediated turn. Its audit event and its history entry are both derived
// from it here, so a relayed exchange and a mediated one are recorded by
// one rule.
type Exchange struct {
	X *exchange.Exchange
	// End is when it ended (zero: now).
	End time.Time
	// Mediated is set for a turn of the tool loop.
	Mediated bool
	// Status is the status the runner got (a relayed exchange: the
	// provider's).
	Status int
	// Failed is set when the exchange produced no answer; Error and
	// ErrorType say why. A relayed exchange's Error is a note on an
	// answer (a stream the runner left early) instead.
	Failed           bool
	Error, ErrorType string
	// TokensIn and TokensOut are the usage over every model call, when
	// HaveUsage; Calls how many model calls made the answer (mediated:
	// hidden rounds plus the final one).
	TokensIn, TokensOut int
	HaveUsage           bool
	Calls               int
	// Cost is what the model calls cost.
	Cost audit.Cost
	// Trace is a mediated turn's rounds; PolicyFiltered the tools its
	// rules withheld.
	Trace          []history.Round
	PolicyFiltered []audit.Filtered
	// Response is the answer's body: one cllama rendered (mediated) or
	// the provider's, kept as a JSON string when it is not JSON.
	Response []byte
	// Span is the exchange's span (the edge's server span; nil or a
	// no-op span when tracing is off), for the trace sink.
	Span trace.Span
}

// ExchangeSink is a Sink that also hears each exchange's fact, after its
// event and entry (the trace sink: TraceSink).
type ExchangeSink interface {
	Exchange(f *Exchange)
}

// Exchange records f: its response or error event, then, for an exchange
// session history keeps, its entry. History keeps every completed 2xx
// exchange and every mediated turn, failed ones included (spec 000
// amends ADR-018: "failed tool executions are also recorded"). A failed
// history append is reported as an error event; it never fails the
// exchange.
func (r *Recorder) Exchange(f *Exchange) {
	if r == nil {
		return
	}
	now := f.End
	if now.IsZero() {
		now = r.now()
	}
	x := f.X
	typ := audit.TypeResponse
	if f.Failed {
		typ = audit.TypeError
	}
	e := ExchangeEvent(x, typ, now)
	e.Mediated, e.StatusCode = f.Mediated, f.Status
	e.CostUSD, e.CostUnknown = f.Cost, f.Cost.Unknown()
	e.PolicyFiltered = f.PolicyFiltered
	if f.HaveUsage {
		e.TokensIn, e.TokensOut = audit.Ptr(f.TokensIn), audit.Ptr(f.TokensOut)
	}
	if f.Failed {
		e.Error, e.ErrorType = f.Error, f.ErrorType
	}
	r.Emit(e)
	if (r.HistoryOn() || r.HasSinks()) && (f.Mediated || f.Status >= 200 && f.Status <= 299) {
		if err := r.Append(f.entry(now)); err != nil {
			r.Emit(audit.Event{ClawID: x.Agent.ID, Type: audit.TypeError, RequestID: x.ID, Format: string(x.Format),
				Mediated: f.Mediated, Error: "session history: " + err.Error()})
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, s := range r.sinks {
		if es, ok := s.(ExchangeSink); ok {
			es.Exchange(f)
		}
	}
}

// entry is f's session-history entry.
func (f *Exchange) entry(now time.Time) history.Entry {
	x := f.X
	h := history.Entry{
		ID:             x.ID,
		Timestamp:      x.Start.UTC(),
		AgentID:        x.Agent.ID,
		Pod:            x.Pod,
		Format:         string(x.Format),
		Model:          x.Model,
		Stream:         x.Stream,
		Status:         history.StatusOK,
		StatusCode:     f.Status,
		Usage:          history.Usage{PromptTokens: f.TokensIn, CompletionTokens: f.TokensOut},
		ToolTrace:      f.Trace,
		CostUSD:        f.Cost,
		CostUnknown:    f.Cost.Unknown(),
		PolicyFiltered: f.PolicyFiltered,
	}
	if f.Mediated {
		// The trace lists rounds; total_rounds counts the model calls
		// that made the answer.
		h.Usage.TotalRounds = f.Calls
	}
	if x.Start.IsZero() {
		h.Timestamp = now.UTC()
	} else {
		h.LatencyMS = now.Sub(x.Start).Milliseconds()
	}
	// The request is kept when it is JSON (the edge validated it; a stage
	// used without the edge is checked here), so the writer need not
	// check it again.
	if x.Checked || jsontop.Valid(x.Original) {
		h.Request, h.BodiesValid = x.Original, true
		h.RequestPlain = x.Checked && x.Plain
	}
	switch {
	case f.Failed:
		h.Status, h.Error = history.StatusError, f.Error
	case f.Mediated, len(f.Response) == 0:
		// A mediated answer is one cllama rendered.
		h.Response, h.Error = f.Response, f.Error
	case jsontop.Valid(f.Response):
		h.Response, h.Error = f.Response, f.Error
	default:
		// A 2xx body that is not JSON (a misbehaving provider) is kept
		// as a string rather than breaking the history line.
		h.Response, _ = json.Marshal(string(f.Response))
		h.Error = f.Error
	}
	if h.StatusCode == 0 && !f.Failed {
		h.StatusCode = http.StatusOK
	}
	return h
}

// Shared pointers for the values nearly every event carries; Emit only
// reads them, so sharing is safe and saves allocations per request.
var (
	ptrTrue, ptrFalse = audit.Ptr(true), audit.Ptr(false)
	ptrZero           = audit.Ptr(0)
)

func boolPtr(b bool) *bool {
	if b {
		return ptrTrue
	}
	return ptrFalse
}

func intPtr(n int) *int {
	if n == 0 {
		return ptrZero
	}
	return audit.Ptr(n)
}

// Refusal is a request cllama answered with an error before it became an
// exchange (a wrong method, no credentials, a body it could not read, no
// route): reported once, as an error event carrying what the edge knew.
type Refusal struct {
	RequestID string
	// Format is the error's shape (the route's format, or history's
	// "mcp"); Route, when set, is the method and path.
	Format, Route string
	// Agent is the caller, when it authenticated (nil: unknown).
	Agent *agentctx.Agent
	// Start is when the request arrived, End when it was refused (zero:
	// now).
	Start, End time.Time
	Err        *apierror.Error
}

// Refuse records f's error event.
func (r *Recorder) Refuse(f *Refusal) {
	if r == nil {
		return
	}
	e := audit.Event{Type: audit.TypeError, RequestID: f.RequestID, Format: f.Format, Route: f.Route,
		StatusCode: f.Err.Status, Error: f.Err.Message}
	if !f.Start.IsZero() {
		end := f.End
		if end.IsZero() {
			end = r.now()
		}
		e.LatencyMS = audit.Ptr(end.Sub(f.Start).Milliseconds())
	}
	if a := f.Agent; a != nil {
		e.ClawID = a.ID
		e.ManifestPresent, e.ToolsCount = boolPtr(a.Tools != nil), intPtr(a.ToolsCount())
	}
	r.Emit(e)
}
