// Package mediate owns the managed-tool loop of cllama (spec 000 "mediated
// mode", 002 "Runtime Behavior", 004 issue 151): one format-neutral loop
// that presents an agent's managed tools next to the runner's own, calls
// the model, executes managed calls through a toolexec.Runner, applies
// the ownership rules, duplicates and budgets, keeps hidden rounds across
// turns (continuity and handoff), answers the runner with JSON or, for a
// runner that streams, with one stream of its format into which every
// round's text goes as the provider writes it (live.go; a format without
// wire.LiveStreaming gets the final answer replayed as a stream), and
// records history and audit.
//
// It does not authenticate, route, decorate or relay passthrough traffic
// (internal/proxy, internal/feeds), nor run a call itself
// (internal/toolexec). Format differences live in internal/wire: the loop
// runs for every registered format (internal/wire/formats) that has the
// wire.ToolLoop ability, and refuses, in the format's own error shape, an
// exchange of a format without it.
//
// Budget exhaustion (max_rounds reached with the model still calling
// managed tools, or total_timeout_ms elapsed) ends the turn with a 502 and
// an error body of the endpoint's format, type "tool_budget_exhausted",
// naming the budget; if a stream has already started (keepalives or text
// sent) the same error goes in-band as the format's error event. No
// partial answer is ever sent as a complete one (spec 000: "If cllama
// itself fails (internal error, budget exhaustion), it returns 502 to the
// runner").
package mediate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/continuity"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/jsonl"
	"github.com/clawdapus/clawgo/internal/policy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
	"github.com/clawdapus/clawgo/internal/wire/formats"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Mediator. Zero values mean the documented defaults.
type Options struct {
	// Runner executes managed calls. Required.
	Runner toolexec.Runner
	// Recorder receives the events (one tool_call event per managed call,
	// a response or error event per turn) and one history entry per
	// mediated exchange: cllama's one recorder, which writes the audit
	// log and session history and feeds metrics and traces. Nil records
	// nothing.
	Recorder *recorder.Recorder
	// StateDir is a directory the Mediator owns: continuity entries are
	// kept there (one 0600 file each) so hidden rounds survive a restart.
	// Empty keeps continuity in memory only.
	StateDir string
	// MaxContinuityEntries bounds the continuity store (default 4096).
	MaxContinuityEntries int
	// ContinuityMaxBytes bounds the continuity store's total size, least
	// recently used entries going first (default 64 MiB).
	ContinuityMaxBytes int64
	// ContinuityMaxEntryBytes bounds one turn's hidden transcript; a
	// larger one is not kept, with an audit error saying so (default 4 MiB).
	ContinuityMaxEntryBytes int64
	// ContinuityMaxAge drops continuity entries unused this long
	// (default 7 days).
	ContinuityMaxAge time.Duration
	// Continuity, when set, is used instead of a store opened from
	// StateDir (tests, or a store shared by several Mediators).
	Continuity ContinuityStore
	// KeepaliveInterval is the spacing of SSE keepalive comments while a
	// streaming turn runs hidden rounds (default 1s; issue 3 asks for at
	// most about one a second).
	KeepaliveInterval time.Duration
	// MaxResponseBytes bounds one upstream response body (default 32 MiB).
	MaxResponseBytes int64
	// UpstreamRetries is how often a round is tried again when the
	// provider answers 429, 503 or 529 (default 3; negative: never),
	// within what is left of the turn's total_timeout_ms.
	UpstreamRetries int
	// RetryBaseDelay is the first wait before such a retry when the
	// provider sends no Retry-After (default 500ms, doubling, jittered);
	// RetryMaxDelay caps any one wait, Retry-After included (default 10s).
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// Approvals, when set, holds calls of tools with approvals for a
	// person's decision (internal/approvals). Nil: such calls are not
	// executed (approval_lost), never run unheld.
	Approvals *approvals.Manager
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Results, when set, keeps managed results over the cap whole behind
	// a handle the model reads with claw.read_result (internal/toolcall);
	// nil cuts them.
	Results resultstore.Store
}

// canonCacheSize bounds the canonical-message memo and the chain-step
// memo per generation (two generations each, of about 100 and 250 bytes
// an entry: about 11 MB at most).
const canonCacheSize = 1 << 14

// Mediator implements exchange.Mediator. It is safe for concurrent use.
type Mediator struct {
	// rec is where every event and history entry goes.
	rec *recorder.Recorder
	// policy evaluates the manifests' grant conditions.
	policy *policy.Evaluator
	opt    Options
	// loops are the registered formats with a tool loop, by name, and
	// in registration order (every one gets tool definitions).
	loops    map[exchange.Format]wire.ToolLoop
	loopList []wire.ToolLoop
	catalogs *catalogCache
	canon    *canonCache
	// owned is the store New opened itself (Close closes it).
	owned *Store
}

var _ exchange.Mediator = (*Mediator)(nil)

// New returns a Mediator. It fails only when StateDir cannot be used.
func New(o Options) (*Mediator, error) {
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = time.Second
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 32 << 20
	}
	if o.UpstreamRetries == 0 {
		o.UpstreamRetries = 3
	}
	if o.RetryBaseDelay <= 0 {
		o.RetryBaseDelay = 500 * time.Millisecond
	}
	if o.RetryMaxDelay <= 0 {
		o.RetryMaxDelay = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Runner == nil {
		return nil, errors.New("mediate: Options.Runner is required")
	}
	var owned *Store
	if o.Continuity == nil {
		// A record a crash cut short, cut off the log at open, is
		// logged like any repaired file.
		store, err := OpenStore(StoreOptions{Dir: o.StateDir, MaxEntries: o.MaxContinuityEntries, MaxBytes: o.ContinuityMaxBytes,
			MaxEntryBytes: o.ContinuityMaxEntryBytes, MaxAge: o.ContinuityMaxAge, Now: o.Now,
			OnRepair: func(c jsonl.Cut) { o.Recorder.Emit(audit.FileRepaired("", c.Path, c.Offset, c.Bytes)) }})
		if err != nil {
			return nil, err
		}
		o.Continuity, owned = store, store
	}
	m := &Mediator{
		owned:    owned,
		opt:      o,
		loops:    map[exchange.Format]wire.ToolLoop{},
		catalogs: newCatalogCache(),
		canon:    newCanonCache(canonCacheSize),
		rec:      o.Recorder,
		policy:   policy.NewEvaluator(),
	}
	for _, f := range formats.All() {
		if l, ok := f.(wire.ToolLoop); ok {
			m.loops[exchange.Format(f.Name())] = l
			m.loopList = append(m.loopList, l)
		}
	}
	return m, nil
}

// Mediate implements exchange.Mediator.
func (m *Mediator) Mediate(w http.ResponseWriter, r *http.Request, x *exchange.Exchange) {
	wf, err := formats.Lookup(x.Format)
	if err != nil {
		// The edge routes only registered formats, so this is a wiring
		// bug; it is answered in the registry's fallback shape.
		apierror.New(http.StatusInternalServerError, apierror.TypeAPI, "cllama: "+err.Error()).Write(w, formats.Fallback())
		return
	}
	f, ok := m.loops[x.Format]
	if !ok {
		apierror.New(http.StatusInternalServerError, apierror.TypeAPI,
			"cllama: managed tools are not available for the "+wf.Name()+" format (POST "+wf.Endpoint().Route+")").Write(w, wf)
		return
	}
	if x.Agent == nil || x.Agent.Tools == nil {
		apierror.New(http.StatusInternalServerError, apierror.TypeAPI, "cllama: mediation called for an agent without managed tools").Write(w, f)
		return
	}
	if x.Agent.ToolsErr != nil {
		apierror.New(http.StatusInternalServerError, apierror.TypeManifest, "cllama: agent "+x.Agent.ID+": "+x.Agent.ToolsErr.Error()).Write(w, f)
		return
	}
	var rs *responder
	defer func() {
		// A bug in the loop must still end the exchange as spec 000 says
		// an internal failure does: a 502, never partial text.
		if p := recover(); p != nil {
			fail := internalFailure("internal error: %v", p)
			if rs == nil {
				fail.apiError().Write(w, f)
			} else {
				rs.stopKeepalive()
				rs.finish(outcome{fail: fail}, wire.Usage{}, false)
			}
			m.auditError(x, fail.msg)
		}
	}()
	t, fail := m.newTurn(r.Context(), x, f)
	if fail != nil {
		fail.apiError().Write(w, f)
		// Refused before its first round: an error event, no history.
		e := recorder.ExchangeEvent(x, audit.TypeError, m.opt.Now())
		e.Mediated, e.StatusCode, e.Error, e.ErrorType = true, fail.status, fail.msg, fail.errType
		m.rec.Emit(e)
		return
	}
	rs = newResponder(w, f, t.req.Stream, m.opt.KeepaliveInterval)
	ctx := r.Context()
	if t.req.Stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		if t.live = newLiveStream(f, rs, t.req.IncludeUsage, cancel); t.live != nil {
			t.live.f.PrepareStreamingUpstream(t.req)
		}
	}
	rs.startKeepalive()
	out := t.run(ctx)
	rs.stopKeepalive()
	if out.fail == nil && out.resp.ID != "" && x.Created != nil && t.live == nil {
		// The runner may read or continue from the response it is
		// answered with: its owner is recorded before it sees the id.
		x.Created(out.resp.ID)
	}
	rs.finish(out, t.usage, t.req.IncludeUsage)
	m.record(t, out, trace.SpanFromContext(r.Context()))
}

// Present renders x's body as the first upstream call of its turn would
// carry it, managed tools presented and the conversation's hidden rounds
// restored, without calling upstream (exchange.Presenter): a token count
// of it is a count of what cllama sends. An agent without managed tools
// gets x.Body back.
func (m *Mediator) Present(ctx context.Context, x *exchange.Exchange) ([]byte, error) {
	if x.Agent == nil || x.Agent.Tools == nil {
		return x.Body, nil
	}
	if x.Agent.ToolsErr != nil {
		return nil, fmt.Errorf("agent %s: %w", x.Agent.ID, x.Agent.ToolsErr)
	}
	f, ok := m.loops[x.Format]
	if !ok {
		return nil, fmt.Errorf("managed tools are not available for the %s format", x.Format)
	}
	t, fail := m.presentTurn(ctx, x, f)
	if fail != nil {
		return nil, fail
	}
	return t.req.Encode()
}

// ContinuityStore is the store the mediator keeps hidden rounds in (the
// one passed in, or the one New opened).
func (m *Mediator) ContinuityStore() continuity.Store { return m.opt.Continuity }

// Close releases the continuity store New opened (a store passed in
// Options.Continuity is the caller's to close). Call it once no
// request is in progress.
func (m *Mediator) Close() error {
	if m.owned == nil {
		return nil
	}
	return m.owned.Close()
}

// ContinuityStats reports the continuity store's entries and bytes.
func (m *Mediator) ContinuityStats() (entries int, bytes int64) {
	if m.opt.Continuity == nil {
		return 0, 0
	}
	switch c := m.opt.Continuity.(type) {
	case continuity.Sizer:
		return c.Len(), c.Bytes()
	case continuity.Counter:
		return c.Len(), 0
	}
	return 0, 0
}
