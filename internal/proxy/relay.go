package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/spend"
	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// maxCaptureBytes bounds how much of a non-streaming response is kept for
// usage extraction and history; the runner still receives all of it.
const maxCaptureBytes = 16 << 20

const maxPooledCapture = 1 << 20

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var copyPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// passthrough sends x upstream once (send sends its body) and relays the
// answer: status, filtered headers and body, event by event for streams.
// strip, when set, takes out of the stream what asking for its usage
// added (the runner did not ask).
func (s *Server) passthrough(w http.ResponseWriter, r *http.Request, f wire.Format, x *exchange.Exchange, strip usageAsker, send func(context.Context) (*http.Response, error)) {
	resp, err := send(r.Context())
	if err != nil {
		s.upstreamFailed(w, r, f, x, err)
		return
	}
	defer resp.Body.Close()
	copyResponseHeaders(w.Header(), resp.Header)
	if isEventStream(resp.Header.Get("Content-Type")) && resp.StatusCode/100 == 2 {
		s.relayStream(w, r, f, x, resp, strip)
		return
	}
	s.relayBody(w, r, f, x, resp)
}

// isEventStream reports whether a Content-Type is text/event-stream,
// parameters allowed, without mime.ParseMediaType's allocations.
func isEventStream(ct string) bool {
	const want = "text/event-stream"
	ct = strings.TrimSpace(ct)
	if len(ct) < len(want) || !strings.EqualFold(ct[:len(want)], want) {
		return false
	}
	rest := strings.TrimSpace(ct[len(want):])
	return rest == "" || rest[0] == ';'
}

// upstreamFailed answers a call that produced no response.
func (s *Server) upstreamFailed(w http.ResponseWriter, r *http.Request, f wire.Format, x *exchange.Exchange, err error) {
	if ref, ok := spend.AsRefusal(err); ok {
		s.refuseBudget(w, f, x, ref)
		return
	}
	x.Spend.Release(context.Background()) // nothing reached the provider, or it answered nothing
	se := s.upstreamError(r, x, err)
	if se == nil {
		s.clientGone(x)
		return
	}
	s.failExchange(w, f, x, se)
}

// upstreamError is the answer to a call that produced no response; nil
// when the runner went away (nobody to answer).
func (s *Server) upstreamError(r *http.Request, x *exchange.Exchange, err error) *statusError {
	switch {
	case r.Context().Err() != nil:
		return nil
	case errors.Is(err, ErrFirstByteTimeout):
		return errStatus(http.StatusGatewayTimeout, apierror.TypeTimeout,
			fmt.Sprintf("provider %s did not answer within %s (CLLAMA_FIRST_BYTE_TIMEOUT)", x.Provider, s.cfg.FirstByteTimeout))
	default:
		return errStatus(http.StatusBadGateway, apierror.TypeUpstream,
			fmt.Sprintf("provider %s could not be reached: %v", x.Provider, err))
	}
}

func (s *Server) clientGone(x *exchange.Exchange) {
	s.auditExchange(x, audit.TypeError, func(e *audit.Event) {
		e.StatusCode, e.Error = StatusClientClosed, "client disconnected; upstream request cancelled"
	})
}

// relayBody copies a non-streaming response, keeping up to maxCaptureBytes
// for usage and history.
func (s *Server) relayBody(w http.ResponseWriter, r *http.Request, f wire.Format, x *exchange.Exchange, resp *http.Response) {
	if resp.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
	capture := bufPool.Get().(*bytes.Buffer)
	capture.Reset()
	defer func() {
		// A buffer grown by a rare huge response is left to the GC
		// rather than pinned in the pool.
		if capture.Cap() <= maxPooledCapture {
			bufPool.Put(capture)
		}
	}()
	if resp.ContentLength > 0 && resp.ContentLength <= maxCaptureBytes {
		capture.Grow(int(resp.ContentLength))
	}
	bp := copyPool.Get().(*[]byte)
	defer copyPool.Put(bp)
	chunk := *bp
	// A body that creates a stored object names it: the runner must not
	// have the whole body, and so the id, before its owner is recorded.
	// With hold set, the last chunk read is held back (in held) until
	// the body has ended and the id is recorded.
	stored, _ := f.(wire.Stored)
	hold := stored != nil && x.Created != nil && resp.StatusCode/100 == 2
	var held []byte
	if hold {
		hp := copyPool.Get().(*[]byte)
		defer copyPool.Put(hp)
		held = (*hp)[:0]
	}
	truncated := false
	for {
		n, rerr := resp.Body.Read(chunk)
		if n > 0 {
			out := chunk[:n]
			if hold {
				// Send what was held, and hold this chunk instead.
				out = held
			}
			if _, werr := w.Write(out); werr != nil {
				s.clientGone(x)
				return
			}
			if hold {
				held = append(held[:0], chunk[:n]...)
			}
			if !truncated && capture.Len()+n <= maxCaptureBytes {
				capture.Write(chunk[:n])
			} else {
				truncated = true // capture stays a prefix of the body
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if r.Context().Err() != nil {
				s.clientGone(x)
				return
			}
			s.auditExchange(x, audit.TypeError, func(e *audit.Event) {
				e.StatusCode, e.Error = resp.StatusCode, "upstream body broke off: "+rerr.Error()
			})
			// The status is sent; aborting is the only way to tell the
			// runner the body is incomplete.
			panic(http.ErrAbortHandler)
		}
	}
	if hold {
		// The top-level id comes first in a provider's body, so even a
		// body too large to capture whole usually names it.
		if id := stored.CreatedID(capture.Bytes()); id != "" {
			x.Created(id)
		}
		if _, werr := w.Write(held); werr != nil {
			s.clientGone(x)
			return
		}
	}
	var u wire.Usage
	var ok bool
	var response []byte
	var note string
	if !truncated {
		u, ok = f.Usage(capture.Bytes())
		response = capture.Bytes()
	} else {
		note = fmt.Sprintf("response larger than %d bytes; not kept in history", maxCaptureBytes)
	}
	s.recordResponse(x, resp.StatusCode, u, ok, response, note)
}

// relayStream relays an SSE response event by event, flushing each one so
// the runner sees it as soon as the provider sent it.
func (s *Server) relayStream(w http.ResponseWriter, r *http.Request, f wire.Format, x *exchange.Exchange, resp *http.Response, strip usageAsker) {
	sse.PrepareHeader(w.Header())
	w.WriteHeader(resp.StatusCode)
	// The headers go out with the first events, in one write (providers
	// open a stream with an event at once: OpenAI's role delta,
	// Anthropic's message_start, the Responses API's response.created).
	sw := sse.NewWriter(w)
	// st is what the format reads of the stream: usage, its end, the
	// provider's own error event.
	var st wire.StreamState
	created := false
	asm, asmNote := s.assembler(f)
	var readErr error
	// Events are written without a flush each; src flushes them all just
	// before the parser waits on the upstream again. Every event thus
	// reaches the runner before the proxy waits for anything, which is
	// what "flush each event immediately" buys, without one syscall per
	// event when the provider sends a burst.
	src := &flushBeforeRead{r: resp.Body, sw: sw}
	for ev, err := range sse.Parse(src, 0) {
		if err != nil {
			readErr = err
			break
		}
		if len(ev.Data) > 0 {
			st = f.ObserveStream(st, ev.Name, ev.Data)
			if asm != nil {
				asm.Observe(ev.Name, ev.Data)
			}
			// The event announcing a stored object reaches the runner
			// only once its owner is recorded.
			if st.CreatedID != "" && !created && x.Created != nil {
				created = true
				x.Created(st.CreatedID)
			}
		}
		raw := ev.Raw
		if strip != nil && len(ev.Data) > 0 {
			var drop bool
			if raw, drop = stripEvent(strip, ev); drop {
				continue
			}
		}
		if _, err := sw.Write(raw); err != nil {
			s.clientGone(x)
			return
		}
		src.pending = true
	}
	if src.flushErr != nil {
		s.clientGone(x)
		return
	}
	// The last burst goes out now, not after history is written.
	if err := sw.Flush(); err != nil {
		s.clientGone(x)
		return
	}
	if readErr != nil && st.Terminal {
		// The terminal event reached the runner (a failed flush ended
		// the relay above): it has the whole stream, and nothing may
		// follow that event. What failed is only the wait for the
		// provider to close the stream, typically cancelled because
		// the runner closed its connection on reading that event, as
		// the OpenAI SDKs do. The exchange is complete.
		readErr = nil
	}
	if readErr == nil && !st.Done() {
		readErr = errors.New("upstream closed the stream before it finished")
	}
	if readErr != nil {
		if r.Context().Err() != nil {
			s.clientGone(x)
			return
		}
		msg := streamFailure(x.Provider, readErr, s.cfg)
		_ = sw.Event(apierror.StreamEvent(f, apierror.TypeUpstreamStream, msg))
		cost := s.settle(x, resp.StatusCode, st.Usage, st.HaveUsage)
		s.auditExchange(x, audit.TypeError, func(e *audit.Event) {
			e.StatusCode, e.Error = resp.StatusCode, msg
			costed(e, cost)
			if st.HaveUsage {
				e.TokensIn, e.TokensOut = audit.Ptr(st.Usage.Prompt()), audit.Ptr(st.Usage.Output)
			}
		})
		return
	}
	if st.UpstreamError != "" {
		cost := s.settle(x, resp.StatusCode, st.Usage, st.HaveUsage)
		s.auditExchange(x, audit.TypeError, func(e *audit.Event) {
			costed(e, cost)
			e.StatusCode, e.Error = resp.StatusCode, "provider error event in stream: "+st.UpstreamError
			if st.HaveUsage {
				e.TokensIn, e.TokensOut = audit.Ptr(st.Usage.Prompt()), audit.Ptr(st.Usage.Output)
			}
		})
		return
	}
	response, note := []byte(nil), asmNote
	if asm != nil {
		response, note = asm.Result()
	}
	s.recordResponse(x, resp.StatusCode, st.Usage, st.HaveUsage, response, note)
}

// assembler returns the history assembler for one stream of f: none when
// history is off, and a note instead when f cannot assemble its streams.
func (s *Server) assembler(f wire.Format) (wire.Assembler, string) {
	if !s.rec.HistoryOn() {
		return nil, ""
	}
	if a, ok := f.(wire.StreamAssembling); ok {
		return a.NewAssembler(), ""
	}
	return nil, "the " + f.Name() + " format cannot assemble its streams; history keeps no response"
}

func streamFailure(provider string, err error, cfg Config) string {
	switch {
	case errors.Is(err, ErrIdleTimeout):
		return fmt.Sprintf("provider %s stream stalled: no data for %s (CLLAMA_STREAM_IDLE_TIMEOUT)", provider, cfg.StreamIdleTimeout)
	case errors.Is(err, sse.ErrEventTooLarge):
		return fmt.Sprintf("provider %s sent an oversized stream event: %v", provider, err)
	case errors.Is(err, context.Canceled):
		return fmt.Sprintf("provider %s stream was cancelled", provider)
	default:
		return fmt.Sprintf("provider %s stream broke off: %v", provider, err)
	}
}

// errClientGone ends a relay whose runner stopped reading.
var errClientGone = errors.New("client stopped reading")

// flushBeforeRead flushes the runner's stream before each read of the
// upstream body when events were written since the last flush.
type flushBeforeRead struct {
	r        io.Reader
	sw       *sse.Writer
	pending  bool
	flushErr error
}

func (f *flushBeforeRead) Read(p []byte) (int, error) {
	if f.pending {
		f.pending = false
		if err := f.sw.Flush(); err != nil {
			f.flushErr = err
			return 0, errClientGone
		}
	}
	return f.r.Read(p)
}
