package mediate

import (
	"github.com/clawdapus/clawgo/internal/jsontop"

	"fmt"
	"net/http"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
)

// record writes the session-history entry of a mediated exchange (spec
// 000 "Session history expands with a tool_trace field"): status, usage
// over every model call with total_rounds, and the per-round trace.
// Failed turns are recorded too.
func (m *Mediator) record(t *turn, out outcome) {
	m.auditOutcome(t, out)
	if !m.rec.HistoryOn() && !m.rec.HasSinks() {
		return
	}
	x := t.x
	e := history.Entry{
		ID:        x.ID,
		Timestamp: x.Start.UTC(),
		AgentID:   x.Agent.ID,
		Pod:       x.Pod,
		Format:    string(x.Format),
		Model:     x.Model,
		Stream:    x.Stream,
		Status:    history.StatusOK,
		// The trace lists rounds; total_rounds counts the model calls
		// that made the answer (hidden rounds plus the final one).
		Usage:          history.Usage{PromptTokens: t.usage.Prompt(), CompletionTokens: t.usage.Output, TotalRounds: t.calls},
		ToolTrace:      t.rounds,
		CostUSD:        x.Spend.Total(),
		CostUnknown:    x.Spend.Total().Unknown(),
		PolicyFiltered: t.filtered,
	}
	if x.Start.IsZero() {
		e.Timestamp = m.opt.Now().UTC()
	} else {
		e.LatencyMS = m.opt.Now().Sub(x.Start).Milliseconds()
	}
	// The request is kept when it is JSON (the edge validated it; a
	// Mediator used without the edge checks here), and the response is
	// one cllama rendered: the writer need not check either again.
	if x.Checked || jsontop.Valid(x.Original) {
		e.Request, e.BodiesValid = x.Original, true
	}
	if out.fail != nil {
		e.Status, e.StatusCode, e.Error = history.StatusError, out.fail.status, out.fail.msg
	} else {
		e.StatusCode, e.Response = http.StatusOK, out.body
	}
	if err := m.rec.Append(e); err != nil {
		m.auditError(x, "session history: "+err.Error())
	}
}

// auditOutcome emits the exchange's response or error event; the proxy
// has already emitted its request event (internal/proxy Options.Mediator).
func (m *Mediator) auditOutcome(t *turn, out outcome) {
	x := t.x
	e := audit.Event{ClawID: x.Agent.ID, RequestID: x.ID, Format: string(x.Format), Model: x.Model, Stream: x.Stream,
		Mediated: true, ManifestPresent: audit.Ptr(true), ToolsCount: audit.Ptr(x.Agent.ToolsCount()),
		TokensIn: audit.Ptr(t.usage.Prompt()), TokensOut: audit.Ptr(t.usage.Output), PolicyFiltered: t.filtered,
		CostUSD: x.Spend.Total(), CostUnknown: x.Spend.Total().Unknown()}
	if !x.Start.IsZero() {
		e.LatencyMS = audit.Ptr(m.opt.Now().Sub(x.Start).Milliseconds())
	}
	if out.fail != nil {
		e.Type, e.StatusCode, e.Error, e.ErrorType = audit.TypeError, out.fail.status, out.fail.msg, out.fail.errType
	} else {
		e.Type, e.StatusCode = audit.TypeResponse, http.StatusOK
	}
	if x.FallbackFrom != "" {
		// The turn's last model call was answered by a fallback target.
		e.Model, e.FallbackFrom, e.FallbackReason = x.Provider+"/"+x.UpstreamModel, x.FallbackFrom, x.FallbackReason
	}
	e.Sent, e.FirstByte = x.Timing()
	m.rec.Emit(e)
}

// auditError reports a recording failure; it never fails the request.
func (m *Mediator) auditError(x *exchange.Exchange, msg string) {
	m.rec.Emit(audit.Event{ClawID: x.Agent.ID, Type: audit.TypeError, RequestID: x.ID, Format: string(x.Format), Mediated: true, Error: msg})
}

// auditRetry records that a round is tried again because the provider was
// busy: an error event naming the status, the try and the wait.
func (m *Mediator) auditRetry(t *turn, status, try int, wait time.Duration) {
	m.rec.Emit(audit.Event{ClawID: t.x.Agent.ID, Type: audit.TypeError, RequestID: t.x.ID, Format: string(t.x.Format),
		Model: t.x.Model, Stream: t.x.Stream, Mediated: true, StatusCode: status, ErrorType: audit.ErrorTypeRetry,
		Error: fmt.Sprintf("provider %s answered %d on call %d; retrying in %s (retry %d)", t.x.Provider, status, t.calls, wait.Round(time.Millisecond), try)})
}
