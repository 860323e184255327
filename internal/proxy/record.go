package proxy

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/jsonl"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
	"go.opentelemetry.io/otel/trace"
)

// OpenRecorder returns the recorder every stage reports to: audit events
// to log (nil: none) and, when cfg.HistoryDir is set, session history in
// a Writer opened there, which it also returns for the caller to close
// (nil when history is off). The Writer syncs as cfg.HistoryFsync says
// (onSyncError, when set, hears a failed background sync), names its
// files after cfg.HistoryReplica, spreads an agent's entries over up to
// cfg.HistoryFilesOrAuto files, and reports a partial last line a crash
// left, cut off when a file is first opened, as an audit event through
// the recorder. This is the one place session history is opened.
func OpenRecorder(cfg Config, log *audit.Logger, onSyncError func(error)) (*recorder.Recorder, *history.Writer, error) {
	cfg = cfg.withDefaults()
	if cfg.HistoryDir == "" {
		return recorder.New(log, nil), nil, nil
	}
	o, err := history.ParseSync(cfg.HistoryFsync)
	if err != nil {
		return nil, nil, fmt.Errorf("CLLAMA_HISTORY_FSYNC: %w", err)
	}
	o.OnSyncError, o.Replica, o.Files = onSyncError, cfg.HistoryReplica(), cfg.HistoryFilesOrAuto()
	// rec is set before any file is opened: files open on their first
	// entry, which comes through rec.
	var rec *recorder.Recorder
	o.OnRepair = func(agent string, c jsonl.Cut) { rec.Emit(audit.FileRepaired(agent, c.Path, c.Offset, c.Bytes)) }
	w, err := history.NewWriterWith(cfg.HistoryDir, o)
	if err != nil {
		return nil, nil, fmt.Errorf("CLAW_SESSION_HISTORY_DIR: %w", err)
	}
	rec = recorder.New(log, w)
	return rec, w, nil
}

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
