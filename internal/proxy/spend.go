package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/clawdapus/clawgo/internal/alerts"
	"github.com/clawdapus/clawgo/internal/sse"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/spend"
	"github.com/clawdapus/clawgo/internal/wire"
)

// SpendOptions configure what model calls cost and the budgets that cap
// them (internal/spend).
type SpendOptions struct {
	// Ledger keeps the budgets' counters; nil: a file under the state
	// directory (spend.json), or memory without one. cmd/cllama passes a
	// Redis ledger with CLLAMA_STATE_URL.
	Ledger spend.Ledger
	// Pricing is the pod's x-claw.cllama-defaults.pricing, over the
	// built-in table.
	Pricing map[string]manifest.Price
	// PodBudget is x-claw.pod-budget: all agents together.
	PodBudget []manifest.Budget
	// Observe receives a budget counter's settled amount after each
	// settlement (the cllama_budget_* gauges).
	Observe func(agent, scope, unit, per string, spent, limit int64)
	// Notify receives every budget warning and refusal, after the audit
	// event (the pod's alert webhook).
	Notify func(spend.Notice)
}

// newMeter builds the server's meter.
func (s *Server) newMeter(o SpendOptions) (*spend.Meter, error) {
	if o.Pricing == nil && o.PodBudget == nil {
		// The pod's prices and budget, as claw compiled them.
		pod, err := manifest.ReadPod(s.cfg.AuthDir)
		if err != nil {
			return nil, err
		}
		o.Pricing, o.PodBudget = pod.Pricing, pod.PodBudget
	}
	// A refusal per request must not flood the webhook: a handful per
	// budget and minute.
	limiter := alerts.NewLimiter(time.Minute, 3)
	ledger := o.Ledger
	if ledger == nil {
		path := ""
		if dir := s.cfg.ContinuityDir(); dir != "" {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("budgets' ledger: %w", err)
			}
			path = filepath.Join(dir, "spend.json")
		}
		l, err := spend.OpenFileLedger(path, s.now)
		if err != nil {
			return nil, err
		}
		ledger = l
	}
	return spend.New(spend.Options{Prices: spend.NewPrices(o.Pricing), Pod: o.PodBudget, Ledger: ledger, Now: s.now,
		Observe: o.Observe,
		Notify: func(n spend.Notice) {
			s.auditBudget(n)
			s.alertBudget(n, limiter)
			if o.Notify != nil {
				o.Notify(n)
			}
		}})
}

// auditBudget emits a budget_warning or budget_exceeded event.
func (s *Server) auditBudget(n spend.Notice) {
	b := &audit.Budget{Scope: n.Scope, Unit: n.Unit, Per: n.Per, Limit: n.Limit, Spent: n.Spent}
	if !n.ResetsAt.IsZero() {
		b.ResetsAt = n.ResetsAt.UTC()
	}
	s.rec.Emit(audit.Event{Type: n.Event, ClawID: n.Agent, Model: n.Model, Budget: b})
}

// alertBudget sends a warning or a refusal to the pod's alert webhook.
func (s *Server) alertBudget(n spend.Notice, limiter *alerts.Limiter) {
	if s.alerts == nil || !limiter.Allow(n.Event+"|"+n.Agent+"|"+n.Scope+"|"+n.Unit+"|"+n.Per) {
		return
	}
	f := map[string]any{"agent": n.Agent, "scope": n.Scope, "unit": n.Unit, "per": n.Per}
	b := audit.Budget{Unit: n.Unit, Limit: n.Limit, Spent: n.Spent}
	raw, _ := b.MarshalJSON()
	var amounts map[string]any
	_ = json.Unmarshal(raw, &amounts)
	f["limit"], f["spent"] = amounts["limit"], amounts["spent"]
	if !n.ResetsAt.IsZero() {
		f["resets_at"] = n.ResetsAt.UTC().Format(time.RFC3339)
	}
	if n.Model != "" {
		f["model"] = n.Model
	}
	s.alerts.Alert(n.Event, f)
}

// openSpend starts metering x, a request of conversation (its key, for
// per-conversation budgets: conversationKey).
func (s *Server) openSpend(x *exchange.Exchange, conversation string) error {
	t, err := s.spend.Open(x.Agent.ID, x.Agent.Metadata.Budget, conversation)
	if err != nil {
		return err
	}
	x.Spend = t
	return nil
}

// refuseBudget answers a call a budget refused: 402 budget_exceeded or
// 403 budget_unenforceable in the endpoint's format, the budget's
// fields in the error object, Retry-After when its window resets.
func (s *Server) refuseBudget(w http.ResponseWriter, f wire.Format, x *exchange.Exchange, r *spend.Refusal) {
	s.auditExchange(x, audit.TypeError, func(e *audit.Event) { e.StatusCode, e.Error = r.Status, r.Error() })
	r.APIError(s.now()).Write(w, f)
}

// settle settles x's call with the usage its provider reported (a
// provider's error status spent nothing) and returns its cost.
func (s *Server) settle(x *exchange.Exchange, status int, u wire.Usage, have bool) audit.Cost {
	if status < 200 || status > 299 {
		x.Spend.Release(context.Background())
		return audit.Cost{}
	}
	return x.Spend.Settle(context.Background(), u, have)
}

// costed sets an event's cost fields.
func costed(e *audit.Event, c audit.Cost) {
	e.CostUSD, e.CostUnknown = c, c.Unknown()
}

// maxOutputKeys are the request members that cap a call's output, for
// its reservation.
var maxOutputKeys = [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"}

func isMaxOutput(key []byte) bool {
	for _, k := range maxOutputKeys {
		if jsontop.KeyEquals(key, k) {
			return true
		}
	}
	return false
}

func partsLen(b [][]byte) int {
	n := 0
	for _, p := range b {
		n += len(p)
	}
	return n
}

// usageAsker is a format whose streams report usage only when asked
// (OpenAI chat completions: stream_options.include_usage): cllama asks
// upstream, and takes out what asking added before the runner sees it.
type usageAsker interface {
	// AskStreamUsage returns the body asking for usage, and false when
	// the runner asked itself (nothing to take out).
	AskStreamUsage(body []byte) ([]byte, bool)
	// StripStreamUsage returns an event's data without what asking
	// added, or drop for the usage event itself.
	StripStreamUsage(data []byte) (out []byte, drop bool)
}

// stripEvent is ev's raw bytes as the runner would have had them without
// the usage asked for: dropped, or its data edited in place.
func stripEvent(a usageAsker, ev sse.Event) ([]byte, bool) {
	out, drop := a.StripStreamUsage(ev.Data)
	if drop {
		return nil, true
	}
	if len(out) == len(ev.Data) {
		return ev.Raw, false
	}
	if i := bytes.Index(ev.Raw, ev.Data); i >= 0 {
		return slices.Concat(ev.Raw[:i], out, ev.Raw[i+len(ev.Data):]), false
	}
	// Data spread over several lines: written as one.
	return slices.Concat([]byte("data: "), out, []byte("\n\n")), false
}

// BudgetStatus reports agent's budgets and the pod's in their current
// windows (the operator's console); none for an unknown agent.
func (s *Server) BudgetStatus(ctx context.Context, agent string) ([]spend.Status, error) {
	a, err := s.agents.Get(agent)
	if err != nil || a == nil {
		return nil, err
	}
	return s.spend.Status(ctx, agent, a.Metadata.Budget)
}
