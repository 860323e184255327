package mediate

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/wire"
)

// responder writes the runner's response. For a streaming runner it sends
// SSE keepalive comments while hidden rounds run (spec 000 "SHOULD keep the
// downstream HTTP stream alive … with harmless SSE keepalive or progress
// comments"); the status line goes out with the first keepalive, so a turn
// that ends before then still gets a real status code.
type responder struct {
	w        http.ResponseWriter
	f        wire.ToolLoop
	stream   bool
	interval time.Duration

	mu      sync.Mutex
	started bool // status and stream headers written
	live    bool // a live stream writes the answer (liveStream)
	// liveEnc is the live stream's encoder (its error event).
	liveEnc wire.Live
	sw      *sse.Writer
	stop    chan struct{}
	done    chan struct{}
}

func newResponder(w http.ResponseWriter, f wire.ToolLoop, stream bool, interval time.Duration) *responder {
	return &responder{w: w, f: f, stream: stream, interval: interval}
}

// startKeepalive starts the keepalive ticker of a streaming response.
func (r *responder) startKeepalive() {
	if !r.stream {
		return
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		tick := time.NewTicker(r.interval)
		defer tick.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-tick.C:
				r.mu.Lock()
				r.beginLocked()
				err := r.sw.Comment("cllama: running managed tools")
				r.mu.Unlock()
				if err != nil {
					return // the client is gone; the request context ends the turn
				}
			}
		}
	}()
}

// stopKeepalive stops the ticker and waits for it.
func (r *responder) stopKeepalive() {
	if r.stop == nil {
		return
	}
	close(r.stop)
	<-r.done
	r.stop = nil
}

func (r *responder) beginLocked() {
	if r.started {
		return
	}
	sse.PrepareHeader(r.w.Header())
	r.w.WriteHeader(http.StatusOK)
	r.sw = sse.NewWriter(r.w)
	r.started = true
}

// finish writes the outcome: the final response as JSON or as a stream of
// the format, or the failure as an error of the format (in-band once the
// stream has started). A runner that went away gets nothing.
func (r *responder) finish(out outcome, total wire.Usage, includeUsage bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out.fail != nil {
		r.fail(out.fail)
		return
	}
	if r.live {
		return // the live stream wrote the answer as it came
	}
	if !r.stream {
		h := r.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(out.body)))
		r.w.WriteHeader(http.StatusOK)
		_, _ = r.w.Write(out.body)
		return
	}
	events, err := r.f.StreamEvents(out.resp, total, includeUsage)
	if err != nil {
		r.fail(internalFailure("rendering the stream: %v", err))
		return
	}
	r.beginLocked()
	for _, e := range events {
		if err := r.sw.Event(sse.Event{Name: e.Name, Data: e.Data}); err != nil {
			return
		}
	}
}

// events writes events of a live stream, starting the stream when it
// has not started.
func (r *responder) events(events []wire.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.beginLocked()
	r.live = true
	for _, e := range events {
		if err := r.sw.Event(sse.Event{Name: e.Name, Data: e.Data}); err != nil {
			return err
		}
	}
	return nil
}

func (r *responder) fail(f *failure) {
	if f.clientGone {
		return
	}
	e := f.apiError()
	if r.started {
		if le, ok := r.liveEnc.(wire.LiveErrorer); ok && r.live {
			_ = r.sw.Event(e.EventOf(le.ErrorEvent(e.Type, e.Message)))
			return
		}
		_ = r.sw.Event(e.Event(r.f))
		return
	}
	if f.upstream != nil && f.fields == nil {
		h := r.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(f.upstream)))
		r.w.WriteHeader(f.status)
		_, _ = r.w.Write(f.upstream)
		return
	}
	e.Write(r.w, r.f)
}
