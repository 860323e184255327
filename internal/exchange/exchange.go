// Package exchange defines the seam between cllama's HTTP edge
// (internal/proxy) and the stages that act on a request: feed decoration
// (internal/feeds) and tool mediation (internal/mediate). The edge builds one
// Exchange per authenticated, routed request and hands it on; it owns no
// format logic itself.
package exchange

import (
	"context"
	"net/http"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
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
	// Original is the runner's body exactly as received.
	Original []byte
	// Body is the body to send upstream: model rewritten, then decorated.
	// Stages replace it; they never mutate the slice in place.
	Body []byte
	// Send performs one upstream call with the provider's credentials and
	// the forwarded headers applied. The caller closes the response body.
	Send func(ctx context.Context, body []byte) (*http.Response, error)
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
	Present(x *Exchange) ([]byte, error)
}
