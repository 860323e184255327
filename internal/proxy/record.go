package proxy

import (
	"net/http"
	"sync"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
	"go.opentelemetry.io/otel/trace"
)

// StatusClientClosed is recorded (never sent) when the runner went away
// before the exchange finished (the nginx convention).
const StatusClientClosed = 499

// auditExchange emits an event about x with the fields every event about
// an exchange carries (recorder.ExchangeEvent), then lets fill add the
// rest.
func (s *Server) auditExchange(x *exchange.Exchange, typ string, fill func(*audit.Event)) {
	if s.rec == nil {
		return
	}
	// fill gets a pooled event: one it could keep would otherwise cost
	// an allocation per event, two per request.
	e := eventPool.Get().(*audit.Event)
	*e = recorder.ExchangeEvent(x, typ, s.now())
	if fill != nil {
		fill(e)
	}
	s.rec.Emit(*e)
	*e = audit.Event{}
	eventPool.Put(e)
}

var eventPool = sync.Pool{New: func() any { return new(audit.Event) }}

// failExchange answers x with a cllama error and records it.
func (s *Server) failExchange(w http.ResponseWriter, f wire.Format, x *exchange.Exchange, se *apierror.Error) {
	s.auditExchange(x, audit.TypeError, func(e *audit.Event) { e.StatusCode, e.Error = se.Status, se.Message })
	se.Write(w, f)
}

// recordResponse records a relayed exchange that got an answer: its
// response event and, for a 2xx, its history entry (recorder.Exchange).
func (s *Server) recordResponse(r *http.Request, x *exchange.Exchange, status int, u wire.Usage, haveUsage bool, response []byte, note string) {
	cost := s.settle(x, status, u, haveUsage)
	s.rec.Exchange(&recorder.Exchange{X: x, End: s.now(), Status: status, Error: note,
		TokensIn: u.Prompt(), TokensOut: u.Output, HaveUsage: haveUsage, Cost: cost, Response: response,
		Span: trace.SpanFromContext(r.Context())})
}

// refuse answers a request refused before it became an exchange, in f's
// error shape, and records it (recorder.Refusal).
func (s *Server) refuse(w http.ResponseWriter, f wire.Format, rf *recorder.Refusal) {
	rf.End = s.now()
	s.rec.Refuse(rf)
	rf.Err.Write(w, f)
}
