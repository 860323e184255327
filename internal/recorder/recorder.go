// Package recorder is the one place cllama's stages report what happened:
// the edge (a request refused, relayed, answered), the tool loop (a round,
// a tool call, a turn's outcome), the MCP broker (a native call), the feed
// decorator (a fetch). Each report goes to the audit log and, for a
// completed exchange, to session history, exactly as documented for those
// two; then to every other Sink (metrics, traces). A new sink is added
// here, once, and hears every stage.
package recorder

import (
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
)

// Sink hears every report after the audit log and history have it. Its
// methods must be fast and safe for concurrent use: they run on the
// request's goroutine. They must not keep e, or slices of it, after they
// return: an entry's request body is a buffer the proxy uses again.
type Sink interface {
	// Event is an audit event as logged (TS set).
	Event(e *audit.Event)
	// Entry is a session-history entry as handed to history (whether or
	// not history is on).
	Entry(e *history.Entry)
}

// Appender appends history entries (history.Writer implements it).
type Appender interface {
	Append(e history.Entry) error
}

// Recorder fans reports out. The zero value and a nil *Recorder record
// nothing. It is safe for concurrent use.
type Recorder struct {
	audit   *audit.Logger
	history Appender
	now     func() time.Time

	mu    sync.RWMutex
	sinks []Sink
}

// New returns a Recorder writing audit lines to a (nil: none) and history
// entries to h (nil: none), then to sinks.
func New(a *audit.Logger, h Appender, sinks ...Sink) *Recorder {
	return &Recorder{audit: a, history: h, now: time.Now, sinks: sinks}
}

// Add adds a sink.
func (r *Recorder) Add(s Sink) {
	r.mu.Lock()
	r.sinks = append(r.sinks, s)
	r.mu.Unlock()
}

// Emit records an audit event.
func (r *Recorder) Emit(e audit.Event) {
	if r == nil {
		return
	}
	if e.TS.IsZero() {
		e.TS = r.now().UTC()
	}
	r.audit.Emit(e)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.sinks) > 0 {
		ev := e // on the heap only when a sink hears it
		for _, s := range r.sinks {
			s.Event(&ev)
		}
	}
}

// Append records a completed exchange's history entry. Its error is
// history's; the sinks hear the entry either way.
func (r *Recorder) Append(e history.Entry) error {
	if r == nil {
		return nil
	}
	var err error
	if r.history != nil {
		err = r.history.Append(e)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.sinks) > 0 {
		en := e // on the heap only when a sink hears it
		for _, s := range r.sinks {
			s.Entry(&en)
		}
	}
	return err
}

// HistoryOn reports whether entries reach session history.
func (r *Recorder) HistoryOn() bool { return r != nil && r.history != nil }

// HasSinks reports whether sinks beyond the audit log and history listen.
func (r *Recorder) HasSinks() bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.sinks) > 0
}
