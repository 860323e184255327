package mediate

import (
	"fmt"
	"net/http"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/recorder"
	"go.opentelemetry.io/otel/trace"
)

// record reports how a mediated turn ended (recorder.Exchange): its
// response or error event and its session-history entry (spec 000
// "Session history expands with a tool_trace field"): status, usage over
// every model call with total_rounds, and the per-round trace. Failed
// turns are recorded too. The proxy has already emitted the exchange's
// request event (internal/proxy Options.Mediator).
func (m *Mediator) record(t *turn, out outcome, span trace.Span) {
	f := &recorder.Exchange{X: t.x, End: m.opt.Now(), Mediated: true, Status: http.StatusOK,
		TokensIn: t.usage.Prompt(), TokensOut: t.usage.Output, HaveUsage: true, Calls: t.calls,
		Cost: t.x.Spend.Total(), Trace: t.rounds, PolicyFiltered: t.filtered, Response: out.body, Span: span}
	if out.fail != nil {
		f.Failed, f.Status, f.Error, f.ErrorType = true, out.fail.status, out.fail.msg, out.fail.errType
	}
	m.rec.Exchange(f)
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
