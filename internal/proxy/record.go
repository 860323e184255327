package proxy

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// StatusClientClosed is recorded (never sent) when the runner went away
// before the exchange finished (the nginx convention).
const StatusClientClosed = 499

// auditExchange emits an event about x with the fields every proxied
// request event carries (spec 002 "Telemetry and Audit": manifest_present,
// tools_count), then lets fill add the rest.
func (s *Server) auditExchange(x *exchange.Exchange, typ string, fill func(*audit.Event)) {
	if s.rec == nil {
		return
	}
	// fill gets a pooled event: one it could keep would otherwise cost
	// an allocation per event, two per request.
	e := eventPool.Get().(*audit.Event)
	*e = audit.Event{
		Type:            typ,
		ClawID:          x.Agent.ID,
		RequestID:       x.ID,
		Format:          string(x.Format),
		Model:           x.Model,
		Stream:          x.Stream,
		ManifestPresent: boolPtr(x.Agent.Tools != nil),
		ToolsCount:      intPtr(x.Agent.ToolsCount()),
	}
	if typ != audit.TypeRequest {
		e.LatencyMS = audit.Ptr(sinceMS(s.now(), x.Start))
		e.Sent, e.FirstByte = x.Timing()
		if x.FallbackFrom != "" {
			// A fallback target answered: the event names it.
			e.Model, e.FallbackFrom, e.FallbackReason = x.Provider+"/"+x.UpstreamModel, x.FallbackFrom, x.FallbackReason
		}
	}
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

// recordResponse emits the response event and, for a completed 2xx
// exchange with history on, appends the history entry.
func (s *Server) recordResponse(x *exchange.Exchange, status int, u wire.Usage, haveUsage bool, response []byte, note string) {
	cost := s.settle(x, status, u, haveUsage)
	s.auditExchange(x, audit.TypeResponse, func(e *audit.Event) {
		e.StatusCode = status
		costed(e, cost)
		if haveUsage {
			e.TokensIn, e.TokensOut = audit.Ptr(u.Prompt()), audit.Ptr(u.Output)
		}
	})
	if !s.rec.HistoryOn() && !s.rec.HasSinks() || status < 200 || status > 299 {
		return
	}
	entry := history.Entry{
		ID:          x.ID,
		Timestamp:   x.Start.UTC(),
		AgentID:     x.Agent.ID,
		Pod:         x.Pod,
		Format:      string(x.Format),
		Model:       x.Model,
		Stream:      x.Stream,
		Status:      history.StatusOK,
		StatusCode:  status,
		LatencyMS:   sinceMS(s.now(), x.Start),
		Request:     x.Original,
		Usage:       history.Usage{PromptTokens: u.Prompt(), CompletionTokens: u.Output},
		CostUSD:     cost,
		CostUnknown: cost.Unknown(),
		Error:       note,
		// The request passed the edge's validation; the response is set
		// below only once checked (or quoted).
		BodiesValid: true,
	}
	switch {
	case len(response) == 0:
	case jsontop.Valid(response):
		entry.Response = response
	default:
		// A 2xx body that is not JSON (a misbehaving provider) is kept as
		// a string rather than breaking the history line.
		entry.Response, _ = json.Marshal(string(response))
	}
	if err := s.rec.Append(entry); err != nil {
		s.auditExchange(x, audit.TypeError, func(e *audit.Event) { e.Error = "session history: " + err.Error() })
	}
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
