package proxy

import (
	"errors"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Large request bodies are read into buffers that are used again. A fresh
// buffer for every 200 KB body is memory the runtime must zero, collect
// and give back to the OS, only to ask for it again: in a load of such
// requests that churn cost cllama more CPU than validating the bodies.
//
// A buffer goes back to its pool only when nothing can read it any more:
// its holders are the handler that read it and every reader of it handed
// to the transport (which may still be sending it after the response
// came: RoundTrip closes a body when it is done with it, possibly later).
// A buffer whose bytes may be kept past the exchange (a mediated turn's
// transcript borrows from it) is disowned and left to the collector. A
// buffer taken again is filled whole by the next body before anything
// reads it, so one agent's bytes never reach another's exchange.

const (
	poolMinBody = 64 << 10 // smaller bodies are cheap to allocate
	poolMaxBody = 8 << 20  // larger ones are rare; pooled, they would pin memory
)

// bodyPools[c] holds buffers of capacity poolMinBody<<c, c up to
// bodyClass(poolMaxBody) = 7.
var bodyPools [8]sync.Pool

// pooledBody is a request body's buffer and who still reads it.
type pooledBody struct {
	b        []byte
	refs     atomic.Int32
	disowned atomic.Bool
}

// bodyClass is the pool whose buffers hold n bytes (n within the bounds).
func bodyClass(n int) int { return bits.Len(uint((n - 1) / poolMinBody)) }

// getBody returns a buffer of n bytes, held once (by the caller), or nil
// when bodies of that size are not pooled.
func getBody(n int64) *pooledBody {
	if n < poolMinBody || n > poolMaxBody {
		return nil
	}
	c := bodyClass(int(n))
	p, _ := bodyPools[c].Get().(*pooledBody)
	if p == nil {
		p = &pooledBody{b: make([]byte, poolMinBody<<c)}
	}
	p.b = p.b[:n]
	p.refs.Store(1)
	p.disowned.Store(false)
	return p
}

// hold adds a holder.
func (p *pooledBody) hold() {
	if p != nil {
		p.refs.Add(1)
	}
}

// drop removes a holder; the last one puts the buffer back, unless it was
// disowned.
func (p *pooledBody) drop() {
	if p == nil || p.refs.Add(-1) != 0 || p.disowned.Load() {
		return
	}
	bodyPools[bodyClass(cap(p.b))].Put(p)
}

// disown keeps the buffer out of the pools for good: its bytes may be
// referred to after the exchange.
func (p *pooledBody) disown() {
	if p != nil {
		p.disowned.Store(true)
	}
}

// heldReader is a reader of a pooled body handed to the transport: it holds
// the buffer until closed, and a read and the close never overlap (the
// transport may close a body from another goroutine while its writer is
// reading it), so no read sees the buffer once it may be in use again.
type heldReader struct {
	mu     sync.Mutex
	r      io.Reader
	p      *pooledBody
	closed bool
}

func newHeldReader(r io.Reader, p *pooledBody) *heldReader {
	p.hold()
	return &heldReader{r: r, p: p}
}

func (h *heldReader) Read(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, errReadAfterClose
	}
	return h.r.Read(b)
}

func (h *heldReader) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.r = nil
		h.p.drop()
	}
	return nil
}

var errReadAfterClose = errors.New("proxy: read of a request body after its close")
