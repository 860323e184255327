// Package exchange defines the seam between cllama's HTTP edge
// (internal/proxy) and the stages that act on a request: feed decoration
// (internal/feeds) and tool mediation (internal/mediate). The edge builds one
// Exchange per authenticated, routed request and hands it on; it owns no
// format logic itself.
package exchange

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/spend"
)

// Format is the API format of a request: the name a format is registered
// under (internal/wire/formats), which also goes into audit and history.
// The formats themselves, and every rule of theirs, live in
// internal/wire/<format>.
type Format string

// Exchange is one runner request after edge checks, identity and routing.
type Exchange struct {
	ID     string // request id, also used for history entry ids
	Start  time.Time
	Agent  *agentctx.Agent
	Pod    string
	Format Format
	// Model is as the runner sent it ("<provider>/<model>"); Provider and
	// UpstreamModel are its two parts.
	Model         string
	Provider      string
	UpstreamModel string
	Stream        bool
	// FallbackFrom is, once a call of the exchange went to a fallback
	// target, the "<provider>/<model>" first asked, and FallbackReason
	// why (Provider and UpstreamModel then name the target that
	// answered). Set by the proxy's upstream call, read after it returns.
	FallbackFrom   string
	FallbackReason string
	// Original is the runner's body exactly as received.
	Original []byte
	// Checked reports that Original and Body are JSON objects the edge
	// has validated, once: later readers split them without validating
	// again. A stage that replaces Body with a document it builds from
	// valid parts (spliced values, encoded strings) keeps it so.
	Checked bool
	// Plain reports that the edge found Original, in the same pass, to be
	// ASCII with no raw CR or LF: valid UTF-8 on one line, which session
	// history writes as it is without scanning it again. Set only with
	// Checked; it says nothing of Body.
	Plain bool
	// Body is the body to send upstream, with the runner's model: the
	// Decorator sees it so, and so does a Mediator, which sends
	// UpstreamModel in its place. A passthrough sends it as slices of the
	// runner's bytes around the new model, uncopied; a token count, with
	// the model rewritten.
	// Stages replace it; they never mutate the slice in place.
	Body []byte
	// Send performs one upstream call with the provider's credentials and
	// the forwarded headers applied. The caller closes the response body.
	Send func(ctx context.Context, body []byte) (*http.Response, error)
	// SendParts, when set, is Send with the body given as slices sent one
	// after the other (none copied): a Mediator sends a round whose
	// transcript holds large documents this way.
	SendParts func(ctx context.Context, body [][]byte) (*http.Response, error)
	// Created, set by the edge for formats whose provider stores what it
	// generates (wire.Stored: the Responses API), records that this
	// exchange's agent, at this provider, owns the stored object id: cllama
	// then relays reads of it and continuations from it for that agent
	// only. It is nil for other formats. The passthrough path calls it
	// itself; a Mediator calls it with the id of the response it answers
	// the runner with (not those of hidden rounds), before the runner can
	// see that id: before the last byte of a non-streaming body, before
	// the event of a stream that announces it. It is safe for concurrent
	// use and cheap (a map insert and the write of one short line).
	Created func(id string)
	// Feeds are the agent's feeds as the decorator injected them, by
	// name (set by the feed Decorator): tool policy reads them.
	Feeds map[string]string
	// Spend meters the exchange's model calls against the budgets: each
	// call is admitted (Send, SendParts) before it leaves, and whoever
	// reads its usage settles it. Nil for a call never costed (a token
	// count).
	Spend *spend.Turn

	// Timing, for metrics and traces: nanoseconds since Start at which
	// the first upstream call was sent and its response headers arrived
	// (0 until then). The edge's Send sets them.
	sentAt, firstByte atomic.Int64
}

// NoteSent records that an upstream call is being sent now.
func (x *Exchange) NoteSent(now time.Time) {
	x.sentAt.CompareAndSwap(0, max(int64(now.Sub(x.Start)), 1))
}

// NoteFirstByte records that an upstream response's headers arrived now.
func (x *Exchange) NoteFirstByte(now time.Time) {
	x.firstByte.CompareAndSwap(0, max(int64(now.Sub(x.Start)), 1))
}

// Timing returns how long after Start the first upstream call was sent
// (cllama's own work before the provider had the request: edge checks,
// the body, feeds, tool presentation) and when its first response headers
// arrived; zero for what has not happened.
func (x *Exchange) Timing() (sent, firstByte time.Duration) {
	return time.Duration(x.sentAt.Load()), time.Duration(x.firstByte.Load())
}

// Decorator rewrites an exchange's Body before it is sent (feeds). It must
// not fail the request for a feed's sake; an error return is reserved for
// an internal failure.
type Decorator interface {
	Decorate(ctx context.Context, x *Exchange) error
}

// Mediator takes over the exchanges of agents that have managed tools: it
// calls upstream through x.Send as often as it needs, writes the runner's
// response to w, and records history and audit for what it did.
type Mediator interface {
	Mediate(w http.ResponseWriter, r *http.Request, x *Exchange)
}

// Presenter is a Mediator that can render an exchange's body as its first
// upstream call would carry it (managed tools added, hidden rounds of the
// conversation restored) without calling upstream: what a token count
// must see to be true.
type Presenter interface {
	Present(ctx context.Context, x *Exchange) ([]byte, error)
}
