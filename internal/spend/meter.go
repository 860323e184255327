package spend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
)

// DefaultOutputTokens is the output a call is assumed to produce, for its
// reservation, when its request sets no max_tokens (max_output_tokens,
// max_completion_tokens).
const DefaultOutputTokens = 4096

// Notice events (audit event types and alert events).
const (
	EventWarning  = "budget_warning"
	EventExceeded = "budget_exceeded"
)

// Error types of the refusals.
const (
	TypeExceeded      = "budget_exceeded"
	TypeUnenforceable = "budget_unenforceable"
)

// Notice is a warning (a soft threshold crossed) or a refusal.
type Notice struct {
	Event    string
	Agent    string
	Model    string
	Scope    string
	Unit     string
	Per      string
	Limit    int64
	Spent    int64
	ResetsAt time.Time
}

// Options configure a Meter.
type Options struct {
	// Prices is the price table (nil: the built-in one).
	Prices *Prices
	// Pod is the pod's budget (x-claw.pod-budget): all agents together.
	Pod []manifest.Budget
	// Ledger keeps the counters (nil: in memory).
	Ledger Ledger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// DefaultOutputTokens replaces DefaultOutputTokens when positive.
	DefaultOutputTokens int
	// Notify, when set, receives every warning and refusal.
	Notify func(Notice)
	// Observe, when set, receives a counter's settled amount after each
	// settlement (for the cllama_budget_* gauges).
	Observe func(agent, scope, unit, per string, spent, limit int64)
}

// Meter costs model calls and holds them to the budgets. It is safe for
// concurrent use.
type Meter struct {
	o   Options
	pod []limit
	// podPerConversation: the pod has a per: conversation budget.
	podPerConversation bool
}

// New returns a Meter, or what is wrong with the pod's budget.
func New(o Options) (*Meter, error) {
	if o.Prices == nil {
		o.Prices = NewPrices(nil)
	}
	if o.Ledger == nil {
		o.Ledger, _ = OpenFileLedger("", o.Now)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DefaultOutputTokens <= 0 {
		o.DefaultOutputTokens = DefaultOutputTokens
	}
	m := &Meter{o: o}
	for i, b := range o.Pod {
		l, err := newLimit(b, ScopePod, "")
		if err != nil {
			return nil, fmt.Errorf("pod-budget[%d]: %w", i, err)
		}
		m.pod = append(m.pod, l)
		m.podPerConversation = m.podPerConversation || b.Per == PerConversation
	}
	return m, nil
}

// PerConversation is the window of the budgets counted per conversation.
const PerConversation = "conversation"

// ConversationIdle is how long a conversation's counter is kept after its
// last call: a conversation idle longer starts its count afresh.
const ConversationIdle = 30 * 24 * time.Hour

// PerConversation reports whether an agent with budgets (or the pod) has
// a budget counted per conversation: only then is a request's
// conversation worth finding (Open's conversation).
func (m *Meter) PerConversation(budgets []manifest.Budget) bool {
	if m.podPerConversation {
		return true
	}
	for _, b := range budgets {
		if b.Per == PerConversation {
			return true
		}
	}
	return false
}

// Close closes the meter's ledger when it is a file (a Redis ledger's
// client is its opener's to close).
func (m *Meter) Close() error {
	if c, ok := m.o.Ledger.(*FileLedger); ok {
		return c.Close()
	}
	return nil
}

// Prices is the meter's price table.
func (m *Meter) Prices() *Prices { return m.o.Prices }

// Open starts metering one runner request of agent, under the agent's
// budget (from its metadata.json) and the pod's. conversation is the key
// of the conversation the request belongs to, for per: conversation
// budgets, scoped to the agent by its maker ("" counts the request as a
// conversation of its own).
func (m *Meter) Open(agent string, budgets []manifest.Budget, conversation string) (*Turn, error) {
	t := &Turn{m: m, agent: agent, conversation: conversation}
	for i, b := range budgets {
		l, err := newLimit(b, ScopeAgent, agent)
		if err != nil {
			return nil, fmt.Errorf("agent %s: budget[%d]: %w", agent, i, err)
		}
		t.limits = append(t.limits, l)
	}
	t.limits = append(t.limits, m.pod...)
	return t, nil
}

// Turn meters the model calls of one runner request: one for a relayed
// request, one per round of a mediated turn, one at a time. A nil Turn
// meters nothing (a token count is never costed).
type Turn struct {
	m            *Meter
	agent        string
	conversation string
	limits       []limit

	mu    sync.Mutex
	calls int
	hold  *hold
	total audit.Cost
	// unsynced is the number of the turn's last settlement a file ledger
	// wrote and Close has still to wait for (0: none).
	unsynced uint64
}

// hold is a call admitted and not yet settled.
type hold struct {
	price   manifest.Price
	priced  bool
	charges []Charge
	units   []string
	limits  []limit
}

// Estimate is what a call may at most consume, for its reservation.
type Estimate struct {
	// Model is "<provider>/<model>" as sent upstream.
	Model string
	// PromptBytes is the size of the request sent: no prompt has more
	// tokens than bytes.
	PromptBytes int
	// MaxOutput is the request's output cap; 0: DefaultOutputTokens.
	MaxOutput int
}

// Refusal is a call refused by a budget: HTTP 402 budget_exceeded, or
// 403 budget_unenforceable for a model with no price under a USD budget.
type Refusal struct {
	Status   int
	Type     string
	Agent    string
	Model    string
	Scope    string
	Unit     string
	Per      string
	Limit    int64
	Spent    int64
	ResetsAt time.Time
}

// Error is the message the runner and the operator are given.
func (r *Refusal) Error() string {
	if r.Type == TypeUnenforceable {
		return fmt.Sprintf("cllama: model %s has no price and agent %s is under a USD budget, so its spend cannot be held to it; set its price in the pod file under x-claw.cllama-defaults.pricing (\"%s\": {input: …, output: …}) and run `claw compile`", r.Model, r.Agent, r.Model)
	}
	key := "x-claw.budget (or the pod's x-claw.budget-defaults) of service " + r.Agent
	if r.Scope == ScopePod {
		key = "x-claw.pod-budget"
	}
	when := "it never resets"
	switch {
	case r.Per == PerConversation:
		when = "it holds for the rest of this conversation"
	case !r.ResetsAt.IsZero():
		when = "it resets at " + r.ResetsAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("cllama: %s budget reached: %s of %s %s per %s spent; %s; raise limit-%s in %s to allow more",
		r.Scope, r.amount(r.Spent), r.amount(r.Limit), r.Unit, r.Per, when, r.Unit, key)
}

func (r *Refusal) amount(v int64) string {
	if r.Unit == manifest.BudgetUSD {
		return audit.FormatUSD(v)
	}
	return fmt.Sprint(v)
}

func (r *Refusal) number(v int64) json.Number {
	return json.Number(r.amount(v))
}

// Fields are the members the error object carries beside type and
// message: scope, unit, per, limit, spent, resets_at (absent for windows
// that never reset); the model for budget_unenforceable.
func (r *Refusal) Fields() map[string]any {
	if r.Type == TypeUnenforceable {
		return map[string]any{"model": r.Model, "pricing_key": "x-claw.cllama-defaults.pricing"}
	}
	f := map[string]any{"scope": r.Scope, "unit": r.Unit, "per": r.Per, "limit": r.number(r.Limit), "spent": r.number(r.Spent)}
	if !r.ResetsAt.IsZero() {
		f["resets_at"] = r.ResetsAt.UTC().Format(time.RFC3339)
	}
	return f
}

// RetryAfter is the seconds until the window resets (false: never).
func (r *Refusal) RetryAfter(now time.Time) (int, bool) {
	if r.ResetsAt.IsZero() {
		return 0, false
	}
	return max(int(r.ResetsAt.Sub(now).Round(time.Second)/time.Second), 1), true
}

// AsRefusal finds a Refusal in err's chain.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// ledgerTimeout bounds one ledger call.
const ledgerTimeout = 5 * time.Second

// Admit admits the next call of the request, reserving what it may
// consume, or refuses it (*Refusal), or fails (the ledger could not be
// reached: the call is not made). A call still held is settled
// conservatively first (see Close).
func (t *Turn) Admit(ctx context.Context, e Estimate) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeLocked()
	m := t.m
	pr, _, priced := m.o.Prices.Lookup(e.Model)
	h := &hold{price: pr, priced: priced}
	now := m.o.Now()
	out := e.MaxOutput
	if out <= 0 {
		out = m.o.DefaultOutputTokens
	}
	est := wire.Usage{Input: e.PromptBytes, Output: out}
	estTokens := Tokens(est)
	estCost := Cost(manifest.Price{Input: max(pr.Input, pr.CacheWrite), Output: pr.Output}, est)
	var resets []time.Time
	for _, l := range t.limits {
		if l.Unit == manifest.BudgetUSD && !priced {
			r := &Refusal{Status: http.StatusForbidden, Type: TypeUnenforceable, Agent: t.agent, Model: e.Model, Scope: l.scope, Unit: l.Unit, Per: l.Per, Limit: l.Limit}
			t.notify(r)
			return r
		}
		ch := Charge{Limit: l.Limit, Check: true}
		var end time.Time
		ch.Key, end = l.key(now, t.conversationKey())
		switch {
		case !end.IsZero():
			ch.Expires = end.Add(24 * time.Hour)
		case l.Per == PerConversation:
			// Conversations come and go: a counter idle that long
			// is forgotten, so the ledger does not grow forever.
			ch.Expires = now.Add(ConversationIdle)
		}
		switch l.Unit {
		case manifest.BudgetUSD:
			ch.Reserve = estCost
		case manifest.BudgetTokens:
			ch.Reserve = estTokens
		case manifest.BudgetRequests:
			if t.calls > 0 {
				continue // a request counts once, at its first call
			}
			ch.Reserve = 1
		}
		h.charges = append(h.charges, ch)
		h.units = append(h.units, l.Unit)
		h.limits = append(h.limits, l)
		resets = append(resets, end)
	}
	if len(h.charges) > 0 {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerTimeout)
		defer cancel()
		i, settled, _, err := m.o.Ledger.Reserve(lctx, h.charges)
		if err != nil {
			return err
		}
		if i >= 0 {
			l := h.limits[i]
			r := &Refusal{Status: http.StatusPaymentRequired, Type: TypeExceeded, Agent: t.agent, Model: e.Model,
				Scope: l.scope, Unit: l.Unit, Per: l.Per, Limit: l.Limit, Spent: settled, ResetsAt: resets[i]}
			t.notify(r)
			return r
		}
	}
	t.calls++
	t.hold = h
	return nil
}

func (t *Turn) conversationKey() string {
	if t.conversation == "" {
		return fmt.Sprintf("%p", t)
	}
	return t.conversation
}

func (t *Turn) notify(r *Refusal) {
	if t.m.o.Notify != nil {
		t.m.o.Notify(Notice{Event: EventExceeded, Agent: t.agent, Model: r.Model, Scope: r.Scope, Unit: r.Unit, Per: r.Per, Limit: r.Limit, Spent: r.Spent, ResetsAt: r.ResetsAt})
	}
}

// Settle settles the call held with the usage its provider reported and
// returns what it cost (unknown for a model with no price). have false:
// the call was answered but its usage never seen (a stream cut short);
// it is charged what was reserved for it, and its cost is unknown.
func (t *Turn) Settle(ctx context.Context, u wire.Usage, have bool) audit.Cost {
	if t == nil {
		return audit.Cost{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hold
	if h == nil {
		return audit.Cost{}
	}
	t.hold = nil
	c := audit.UnknownCost()
	if have && h.priced {
		c = audit.KnownCost(Cost(h.price, u))
	}
	ss := make([]Settlement, len(h.charges))
	for i, ch := range h.charges {
		ss[i] = Settlement{Key: ch.Key, Reserved: ch.Reserve, Actual: ch.Reserve, Expires: ch.Expires}
		if have {
			switch h.units[i] {
			case manifest.BudgetUSD:
				// A call that cannot be priced (a fallback target with
				// no price) keeps what was reserved for it: never free.
				if c.Known {
					ss[i].Actual = c.MicroUSD
				}
			case manifest.BudgetTokens:
				ss[i].Actual = Tokens(u)
			}
		}
	}
	t.settle(ctx, h, ss)
	t.total = t.total.Add(c)
	return c
}

// Reprice prices the call held at model's price ("<provider>/<model>"):
// a fallback target answered it instead of the model it was admitted for.
func (t *Turn) Reprice(model string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hold != nil {
		t.hold.price, _, t.hold.priced = t.m.o.Prices.Lookup(model)
	}
}

// Release settles the call held as having spent nothing (the provider
// refused it, or it never reached the provider). It still counts as a
// request.
func (t *Turn) Release(ctx context.Context) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hold
	if h == nil {
		return
	}
	t.hold = nil
	ss := make([]Settlement, len(h.charges))
	for i, ch := range h.charges {
		ss[i] = Settlement{Key: ch.Key, Reserved: ch.Reserve, Expires: ch.Expires}
		if h.units[i] == manifest.BudgetRequests {
			ss[i].Actual = ch.Reserve
		}
	}
	t.settle(ctx, h, ss)
}

// Syncs reports whether Close will wait for the disk: the turn settled
// calls, or holds one, in a file ledger.
func (t *Turn) Syncs() bool {
	if t == nil {
		return false
	}
	fl, ok := t.m.o.Ledger.(*FileLedger)
	if !ok || fl.path == "" {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unsynced > 0 || t.hold != nil
}

// Close settles a call still held as if it had consumed what was
// reserved for it: a request that ends without its usage seen (the
// runner went away mid-stream) is not free. With a file ledger it
// returns once the turn's settlements are on disk: Settle and Release
// write them and go on, so that the runner has its answer and a
// mediated turn its next round without waiting for the fsync.
func (t *Turn) Close(ctx context.Context) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.closeLocked()
	seq := t.unsynced
	t.unsynced = 0
	t.mu.Unlock()
	if fl, ok := t.m.o.Ledger.(*FileLedger); ok && seq > 0 {
		_ = fl.syncTo(seq) // a failure is the ledger's own to report
	}
}

func (t *Turn) closeLocked() {
	if h := t.hold; h != nil {
		t.hold = nil
		ss := make([]Settlement, len(h.charges))
		for i, ch := range h.charges {
			ss[i] = Settlement{Key: ch.Key, Reserved: ch.Reserve, Actual: ch.Reserve, Expires: ch.Expires}
		}
		t.settle(context.Background(), h, ss)
	}
}

// Total is what the settled calls cost together.
func (t *Turn) Total() audit.Cost {
	if t == nil {
		return audit.Cost{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// settle writes ss and raises the warnings of the soft thresholds they
// crossed. A ledger failure is reported as a warning-free loss: the
// reservation stays until the window ends (erring on refusing).
func (t *Turn) settle(ctx context.Context, h *hold, ss []Settlement) {
	if len(ss) == 0 {
		return
	}
	var after []int64
	var err error
	if fl, ok := t.m.o.Ledger.(*FileLedger); ok {
		// Written now, on disk by Close.
		var seq uint64
		after, seq, err = fl.settle(ss)
		t.unsynced = max(t.unsynced, seq)
	} else {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerTimeout)
		defer cancel()
		after, err = t.m.o.Ledger.Settle(lctx, ss)
	}
	if err != nil || len(after) != len(ss) {
		return
	}
	for i, l := range h.limits {
		if t.m.o.Observe != nil {
			t.m.o.Observe(t.agent, l.scope, l.Unit, l.Per, after[i], l.Limit)
		}
		if l.Soft <= 0 || t.m.o.Notify == nil {
			continue
		}
		threshold := int64(float64(l.Limit) * l.Soft)
		if before := after[i] - ss[i].Actual; before < threshold && after[i] >= threshold {
			_, end := l.key(t.m.o.Now(), t.conversationKey())
			t.m.o.Notify(Notice{Event: EventWarning, Agent: t.agent, Scope: l.scope, Unit: l.Unit, Per: l.Per, Limit: l.Limit, Spent: after[i], ResetsAt: end})
		}
	}
}

// Status is one budget in its current window: what its counter settled.
type Status struct {
	Scope, Unit, Per string
	// Limit and Spent are micro-USD for unit usd, else requests or tokens.
	Limit, Spent int64
	// ResetsAt is when the window resets (zero: never, or per
	// conversation).
	ResetsAt time.Time
}

// Status reports agent's budgets (from its metadata.json) and the pod's
// in their current windows, for the operator's console. Conversation
// budgets have no single window and are left out.
func (m *Meter) Status(ctx context.Context, agent string, budgets []manifest.Budget) ([]Status, error) {
	t, err := m.Open(agent, budgets, "")
	if err != nil {
		return nil, err
	}
	now := m.o.Now()
	var out []Status
	var keys []string
	for _, l := range t.limits {
		if l.Per == PerConversation {
			continue
		}
		k, end := l.key(now, "")
		keys = append(keys, k)
		out = append(out, Status{Scope: l.scope, Unit: l.Unit, Per: l.Per, Limit: l.Limit, ResetsAt: end})
	}
	if len(keys) == 0 {
		return nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, ledgerTimeout)
	defer cancel()
	spent, err := m.o.Ledger.Spent(lctx, keys)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if i < len(spent) {
			out[i].Spent = spent[i]
		}
	}
	return out, nil
}
