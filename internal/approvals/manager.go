package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
)

// DefaultPoll is how often a held call reads its request again besides
// being told (a missed notice still ends the wait) and reports progress.
const DefaultPoll = 2 * time.Second

// storeTimeout bounds one Store operation of a hold.
const storeTimeout = 5 * time.Second

// Options configure a Manager.
type Options struct {
	// Store keeps the requests (default: NewLocal()).
	Store Store
	// Emit receives approval_requested and approval_decided (cllama's
	// recorder). Nil discards.
	Emit func(audit.Event)
	// Alert receives approval_requested for the pod's alert webhook (an
	// alerts.Sink's Alert). Nil sends none.
	Alert func(event string, fields map[string]any)
	// Replica names this process in the requests it holds.
	Replica string
	// Poll is DefaultPoll when zero.
	Poll time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Manager holds calls and decides requests. It is safe for concurrent
// use.
type Manager struct{ o Options }

// New returns a Manager.
func New(o Options) *Manager {
	if o.Store == nil {
		o.Store = NewLocal()
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Manager{o: o}
}

// Store is the Manager's Store.
func (m *Manager) Store() Store { return m.o.Store }

// Close closes the Store.
func (m *Manager) Close() error { return m.o.Store.Close() }

// Held is a call to hold.
type Held struct {
	Agent, Tool, Service, Mode string
	// Arguments are the call's arguments as the service would receive
	// them (a JSON object).
	Arguments json.RawMessage
	// Rule is the approval that held the call (manifest.Approval.Rule).
	Rule        string
	ToolsSHA256 string
	// Timeout is how long the call waits for a decision.
	Timeout time.Duration
	// Progress, when set, hears every Poll how long the call waited so
	// far, out of Timeout.
	Progress func(waited, timeout time.Duration)
}

// Hold creates the request for h and waits until it is decided, expires
// (Timeout) or ctx ends (Cancelled: the caller went away), and returns it
// as it ended. Only a request returned Approved may run, with exactly
// its Arguments. A request the Store could not keep is returned Lost.
func (m *Manager) Hold(ctx context.Context, h Held) *Request {
	now := m.o.Now()
	r := &Request{ID: NewID(), Agent: h.Agent, Tool: h.Tool, Service: h.Service, Mode: h.Mode, Arguments: h.Arguments,
		ArgumentsSHA256: Digest(h.Arguments), Rule: h.Rule, ToolsSHA256: h.ToolsSHA256,
		CreatedAt: now.UTC(), ExpiresAt: now.Add(h.Timeout).UTC(), State: Pending, Replica: m.o.Replica}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	err := m.o.Store.Create(sctx, r)
	cancel()
	if err != nil {
		decide(r, Decision{State: Lost, By: "cllama", Reason: "the request could not be stored: " + err.Error()}, m.o.Now())
		m.decided(r, now)
		return r
	}
	m.requested(r)
	final := m.wait(ctx, r, h)
	m.decided(final, now)
	return final
}

// wait is Hold once the request is stored.
func (m *Manager) wait(ctx context.Context, r *Request, h Held) *Request {
	watch, stop := m.o.Store.Watch(r.ID)
	defer stop()
	timer := time.NewTimer(h.Timeout)
	defer timer.Stop()
	tick := time.NewTicker(m.o.Poll)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case _, open := <-watch:
			if !open {
				watch = nil
			}
			if f := m.ended(ctx, r.ID); f != nil {
				return f
			}
		case <-tick.C:
			if f := m.ended(ctx, r.ID); f != nil {
				return f
			}
			if h.Progress != nil {
				h.Progress(time.Since(start), h.Timeout)
			}
		case <-timer.C:
			return m.end(ctx, r, Decision{State: Timeout, By: "cllama", Reason: fmt.Sprintf("no decision within %s", h.Timeout)})
		case <-ctx.Done():
			return m.end(ctx, r, Decision{State: Cancelled, By: "cllama", Reason: "the caller went away (the runner's request ended) before a decision"})
		}
	}
}

// ended returns request id when it is no longer pending.
func (m *Manager) ended(ctx context.Context, id string) *Request {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	f, err := m.o.Store.Get(sctx, id)
	if err != nil || !f.Final() {
		return nil
	}
	return f
}

// end ends r with d unless it was decided meanwhile (the decision that
// came first stands). When the Store cannot be written, r ends d here all
// the same: the call does not run.
func (m *Manager) end(ctx context.Context, r *Request, d Decision) *Request {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	f, err := m.o.Store.Decide(sctx, r.ID, d, m.o.Now())
	if f != nil && (err == nil || err == ErrDecided) {
		return f
	}
	c := *r
	decide(&c, d, m.o.Now())
	return &c
}

// Decide is an operator's decision (Approved or Denied) on request id.
func (m *Manager) Decide(ctx context.Context, id string, d Decision) (*Request, error) {
	return m.o.Store.Decide(ctx, id, d, m.o.Now())
}

func (m *Manager) requested(r *Request) {
	exp := r.ExpiresAt
	if m.o.Emit != nil {
		m.o.Emit(audit.Event{Type: audit.TypeApprovalRequested, ClawID: r.Agent, Tool: r.Tool, Service: r.Service, Mode: r.Mode,
			Approval: &audit.Approval{ID: r.ID, Rule: r.Rule, ArgumentsSHA256: r.ArgumentsSHA256, ExpiresAt: &exp}})
	}
	if m.o.Alert != nil {
		m.o.Alert(audit.TypeApprovalRequested, map[string]any{
			"id": r.ID, "agent": r.Agent, "tool": r.Tool, "service": r.Service, "arguments": r.Arguments,
			"arguments_sha256": r.ArgumentsSHA256, "rule": r.Rule, "expires_at": r.ExpiresAt.Format(time.RFC3339),
			"approve": "claw approve " + r.ID, "deny": "claw deny " + r.ID + " --reason TEXT",
		})
	}
}

// decided records how r ended, created at start.
func (m *Manager) decided(r *Request, start time.Time) {
	if m.o.Emit == nil {
		return
	}
	wait := m.o.Now().Sub(start).Milliseconds()
	m.o.Emit(audit.Event{Type: audit.TypeApprovalDecided, ClawID: r.Agent, Tool: r.Tool, Service: r.Service, Mode: r.Mode,
		Approval: &audit.Approval{ID: r.ID, Decision: r.State, By: r.By, Reason: r.Reason, WaitMS: &wait, ArgumentsSHA256: r.ArgumentsSHA256}})
}

// Lost records requests a previous process left pending (OpenLocal) as
// ended lost.
func (m *Manager) Lost(rs []*Request) {
	for _, r := range rs {
		m.decided(r, r.CreatedAt)
	}
}
