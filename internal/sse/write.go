package sse

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

// PrepareHeader sets the response headers of an event stream. Call it before
// the status is written. Cache-Control keeps intermediaries from holding the
// stream; X-Accel-Buffering stops nginx-style proxies from buffering it.
func PrepareHeader(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Del("Content-Length")
}

// Writer writes events to an HTTP response and flushes each one, so the
// client sees every event as soon as it is written (first byte before the
// upstream finishes). It is safe for concurrent use: a keepalive goroutine
// may call Comment while another goroutine writes events; each call writes
// one whole block.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	rc  *http.ResponseController
	buf []byte
}

// NewWriter returns a Writer for w. It writes nothing by itself; the caller
// sets the headers (PrepareHeader) and status first, or lets the first write
// send 200.
func NewWriter(w http.ResponseWriter) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w)}
}

// Event encodes e (Name, ID and Data; Raw is ignored) and flushes it. Data
// is split into one "data:" line per line; an event with empty Data still
// carries one empty "data:" line so that clients dispatch it.
func (w *Writer) Event(e Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := AppendEvent(w.buf[:0], e)
	w.buf = b[:0]
	return w.writeFlush(b)
}

// Raw writes b, which must already be whole SSE blocks (for example an
// upstream event's Raw bytes), and flushes.
func (w *Writer) Raw(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeFlush(b)
}

// Comment writes the comment block ": text\n\n" and flushes. Clients ignore
// comments, which makes them the keepalive of choice during long waits;
// text must not contain line breaks (they are replaced by spaces).
func (w *Writer) Comment(text string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := append(w.buf[:0], ':')
	if text != "" {
		b = append(b, ' ')
		for i := 0; i < len(text); i++ {
			c := text[i]
			if c == '\r' || c == '\n' {
				c = ' '
			}
			b = append(b, c)
		}
	}
	b = append(b, '\n', '\n')
	w.buf = b[:0]
	return w.writeFlush(b)
}

// Write writes p, which must be whole SSE blocks, WITHOUT flushing: it is
// for relays that forward a burst of events already received and then call
// Flush before they wait for more (see proxy's relay). Anything else should
// use Raw, Event or Comment, which flush.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// Flush flushes anything buffered by the ResponseWriter.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flush()
}

func (w *Writer) writeFlush(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		return err
	}
	return w.flush()
}

func (w *Writer) flush() error {
	if err := w.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// AppendEvent appends the wire form of e (without Raw) to b. Line breaks in
// Name or ID would corrupt the framing and are dropped.
func AppendEvent(b []byte, e Event) []byte {
	if e.Name != "" {
		b = append(b, "event: "...)
		b = appendOneLine(b, e.Name)
		b = append(b, '\n')
	}
	if e.ID != "" {
		b = append(b, "id: "...)
		b = appendOneLine(b, e.ID)
		b = append(b, '\n')
	}
	data := e.Data
	for {
		b = append(b, "data: "...)
		i := indexLineBreak(data)
		if i < 0 {
			b = append(b, data...)
			b = append(b, '\n')
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(b, '\n')
}

func appendOneLine(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] != '\r' && s[i] != '\n' {
			b = append(b, s[i])
		}
	}
	return b
}

func indexLineBreak(b []byte) int {
	for i, c := range b {
		if c == '\r' || c == '\n' {
			return i
		}
	}
	return -1
}
