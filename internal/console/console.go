// Package console is the operator's console: HTML pages served on cllama's
// admin listener that show the pod live (agents, turns, tool calls,
// spend, approvals, feeds). Pages are html/template, assets are embedded,
// no script runs inline (the Content-Security-Policy forbids it), and
// everything an agent, a model or a service wrote is escaped before it
// reaches a page. Past turns come from the history index
// (internal/histindex), live counters from the recorder (Live is a
// recorder.Sink). A login page takes the operator token and sets a
// session cookie; every POST carries the page's CSRF token.
package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/histindex"
)

// Approval is one call held for an operator's decision.
type Approval struct {
	ID        string
	Agent     string
	Tool      string
	Arguments json.RawMessage
	Requested time.Time
	// Expires is when the call is refused undecided (zero: never).
	Expires time.Time
}

// Approvals is what the console needs of the approvals queue: the pending
// calls and a decision on one. A nil Approvals renders "none configured".
type Approvals interface {
	Pending(ctx context.Context) ([]Approval, error)
	// Decide approves (true) or denies one pending call; by names the
	// operator's session.
	Decide(ctx context.Context, id string, approve bool, by string) error
}

// Budget is one limit and what its current window has spent against it.
type Budget struct {
	// Scope is "agent" or "pod"; Unit "usd", "requests" or "tokens";
	// Period as configured ("minute" … "month", "total").
	Scope, Unit, Period string
	// Limit and Spent are micro-USD for unit usd, else requests or
	// tokens; Spent is the current window's.
	Limit, Spent int64
	// ResetsAt is when the window starts again (zero: never).
	ResetsAt time.Time
}

// Budgets is what the console needs of spend accounting: the budgets that
// apply to an agent, its own and the pod's, in every unit (none: nil). A nil Budgets renders "none configured"; the
// spend shown then is the sum of the history entries' cost_usd.
type Budgets interface {
	AgentBudgets(agent string) []Budget
}

// Mux is where the console mounts: the admin listener (internal/admin).
// Every console route is mounted public and checks its session itself, so
// a browser without one is sent to the login page rather than refused.
type Mux interface {
	HandlePublic(pattern string, h http.Handler)
}

// Options configure a Console.
type Options struct {
	Pod string
	// Index is the history index; nil when history is off (pages say so).
	Index *histindex.Index
	// Agents lists the compiled agents.
	Agents AgentSource
	// VerifyToken reports whether token is the operator token (constant
	// time). Required: without it nobody can log in.
	VerifyToken func(token string) bool
	// Bearer, when set, reports whether a request carries the operator
	// token as a bearer token (admin.Authorized): such a request needs no
	// session (scripts, curl).
	Bearer func(r *http.Request) bool
	// OnLogin hears every login attempt that reached the token check or
	// was refused for too many failures (the audit log); it never gets
	// the token sent.
	OnLogin   func(LoginAttempt)
	Approvals Approvals
	Budgets   Budgets
	// SessionTTL is how long a login lasts (default 12h).
	SessionTTL time.Duration
	// SyncEvery is how often the index reads new history lines when no
	// exchange prompted it (default 5s).
	SyncEvery time.Duration
	Now       func() time.Time
}

// Console serves the pages.
type Console struct {
	opts     Options
	live     *Live
	sessions *sessions
	limiter  *loginLimiter
	pages    *pages
	// started is when the console was made: the live counters count
	// what happens from then on, history what came before (seed).
	started time.Time
	// seeded is closed once the counters hold the history of the last
	// Window before started (or there is none to read).
	seeded chan struct{}
	// done ends the live streams (Close): a server's shutdown waits for
	// them otherwise.
	done      chan struct{}
	closeOnce sync.Once
}

// Close ends the live streams open now; the pages keep working.
func (c *Console) Close() {
	c.closeOnce.Do(func() { close(c.done) })
}

// New returns a Console. Add its Live to the recorder, Mount it, and Run
// it for the index to follow history.
func New(o Options) (*Console, error) {
	if o.VerifyToken == nil {
		return nil, errors.New("console: VerifyToken is required")
	}
	if o.Agents == nil {
		o.Agents = noAgents{}
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Console{opts: o, live: NewLive(o.Now), sessions: newSessions(o.SessionTTL, o.Now), limiter: newLoginLimiter(), pages: p,
		started: o.Now(), seeded: make(chan struct{}), done: make(chan struct{})}, nil
}

// Live is the recorder sink feeding the live counters.
func (c *Console) Live() *Live { return c.live }

// Run keeps the index following history until ctx ends: it reads new
// lines soon after each exchange, and every SyncEvery. When ctx ends the
// live streams end too (Close).
func (c *Console) Run(ctx context.Context) {
	defer c.Close()
	if c.opts.Index == nil {
		close(c.seeded)
		return
	}
	t := time.NewTicker(c.opts.SyncEvery)
	defer t.Stop()
	for first := true; ; first = false {
		_, _ = c.opts.Index.Sync(ctx)
		if first {
			c.seed(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.live.kick:
			// Entries come in bursts: one read for the burst.
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// seed adds the exchanges history holds from the last Window before the
// console started to the live counters, so that a restart does not zero
// them. It runs once, after the index first caught up with history.
func (c *Console) seed(ctx context.Context) {
	defer close(c.seeded)
	counts, err := c.opts.Index.Exchanges(ctx, c.started.Add(-Window), c.started, slot)
	if err == nil && len(counts) > 0 {
		c.live.Seed(counts)
	}
}

// Authenticated reports whether r carries a console session (for the
// admin listener's authenticator, beside its bearer check). A request
// that changes something must also carry the session's CSRF token in the
// X-CSRF-Token header.
func (c *Console) Authenticated(r *http.Request) bool {
	s, ok := c.sessions.get(r)
	if !ok {
		return false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	}
	return s.checkCSRF(r.Header.Get("X-CSRF-Token"))
}

// Mount adds the console's routes to m.
func (c *Console) Mount(m Mux) {
	h := func(pattern string, f http.HandlerFunc) { m.HandlePublic(pattern, secure(f)) }
	h("GET /login", c.loginPage)
	h("POST /login", c.login)
	h("POST /logout", c.page(c.logout))
	h("GET /static/{file}", c.static)
	h("GET /{$}", c.page(c.home))
	h("GET /agents/{id}", c.page(c.agent))
	h("GET /turns/{id}", c.page(c.turn))
	h("GET /tools", c.page(c.tools))
	h("GET /approvals", c.page(c.approvals))
	h("POST /approvals/{id}", c.page(c.decide))
	h("GET /feeds", c.page(c.feeds))
	h("GET /events", c.api(c.events))
	h("GET /charts/requests.svg", c.api(c.requestsChart))
	h("GET /charts/spend.svg", c.api(c.spendChart))
}

// csp allows the console's own script, styles and images, and nothing
// inline.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secure sets the headers every console response carries.
func secure(f http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		f(w, r)
	}
}
