package spend

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/testproc"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/sharedstate"
	"github.com/clawdapus/clawgo/internal/wire"
)

// Hand-computed: sonnet 4.5 at $3 in, $15 out, $0.30 cache read, $3.75
// cache write per 1M tokens; 1,000 input + 2,000 cache read + 4,000
// cache write + 500 output = 0.003 + 0.0006 + 0.015 + 0.0075 = $0.0261.
// gpt-4o at $2.50 in, $1.25 cached, $10 out: 10,000 prompt tokens of
// which 8,000 cached, 1,000 output (300 of them reasoning) =
// 0.005 + 0.01 + 0.01 = $0.025.
func TestCostOfScriptedUsage(t *testing.T) {
	tab := NewPrices(nil)
	pr, key, ok := tab.Lookup("anthropic/claude-sonnet-4-5-20250929")
	if !ok || key != "anthropic/claude-sonnet-4-5" {
		t.Fatalf("lookup = %q, %v", key, ok)
	}
	if got := Cost(pr, wire.Usage{Input: 1000, CacheRead: 2000, CacheCreation: 4000, Output: 500}); got != 26_100 {
		t.Fatalf("anthropic cost = %d µUSD, want 26100", got)
	}
	pr, key, _ = tab.Lookup("openai/gpt-4o-2024-08-06")
	if key != "openai/gpt-4o" {
		t.Fatalf("gpt-4o-2024-08-06 took %q", key)
	}
	if got := Cost(pr, wire.Usage{Input: 10_000, CachedInput: 8000, Output: 1000, Reasoning: 300}); got != 25_000 {
		t.Fatalf("openai cost = %d µUSD, want 25000", got)
	}
	if _, key, _ = tab.Lookup("openai/gpt-4o-mini-2024-07-18"); key != "openai/gpt-4o-mini" {
		t.Fatalf("longest prefix: gpt-4o-mini-… took %q", key)
	}
	// The pod's entries override and add.
	tab = NewPrices(map[string]manifest.Price{"openai/gpt-4o": {Input: 1_000_000, Output: 2_000_000}, "local/llama": {Input: 1}})
	if pr, _, _ := tab.Lookup("openai/gpt-4o"); pr.Input != 1_000_000 {
		t.Fatalf("override not taken: %+v", pr)
	}
	if _, _, ok := tab.Lookup("local/llama-3"); !ok {
		t.Fatal("added entry not found by prefix")
	}
	if _, _, ok := tab.Lookup("nobody/model"); ok {
		t.Fatal("an unknown model has a price")
	}
	// Rounded up to the micro-dollar; never negative or overflowing.
	if got := Cost(manifest.Price{Input: 1}, wire.Usage{Input: 1}); got != 1 {
		t.Fatalf("a fraction of a micro-dollar = %d", got)
	}
	if got := Cost(manifest.Price{Input: MaxPriceUSD * 1_000_000, Output: MaxPriceUSD * 1_000_000, CachedInput: MaxPriceUSD * 1_000_000, CacheWrite: MaxPriceUSD * 1_000_000},
		wire.Usage{Input: 1 << 62, Output: 1 << 62, CacheRead: 1 << 62, CacheCreation: 1 << 62}); got <= 0 {
		t.Fatalf("huge usage overflowed: %d", got)
	}
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

var gpt = Estimate{Model: "openai/gpt-4o", PromptBytes: 100, MaxOutput: 100}

// call admits and settles one call of agent with usage u.
func call(t *testing.T, m *Meter, agent string, b []manifest.Budget, u wire.Usage) (audit.Cost, error) {
	t.Helper()
	turn, err := m.Open(agent, b, "")
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Close(context.Background())
	if err := turn.Admit(context.Background(), gpt); err != nil {
		return audit.Cost{}, err
	}
	return turn.Settle(context.Background(), u, true), nil
}

func TestWindowResetsOnTheClock(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 10, 23, 59, 0, 0, time.UTC)}
	var notices []Notice
	m, err := New(Options{Now: c.now, Notify: func(n Notice) { notices = append(notices, n) }})
	if err != nil {
		t.Fatal(err)
	}
	b := []manifest.Budget{{Unit: "requests", Limit: 2, Per: "day", Soft: 0.5}}
	for i := 0; i < 2; i++ {
		if _, err := call(t, m, "a", b, wire.Usage{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = call(t, m, "a", b, wire.Usage{})
	r, ok := AsRefusal(err)
	if !ok || r.Status != 402 || r.Unit != "requests" || r.Per != "day" || r.Spent != 2 || r.Limit != 2 ||
		!r.ResetsAt.Equal(time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("third request: %v %+v", err, r)
	}
	if len(notices) != 2 || notices[0].Event != EventWarning || notices[1].Event != EventExceeded {
		t.Fatalf("notices = %+v", notices)
	}
	// Another agent has a budget of its own.
	if _, err := call(t, m, "b", b, wire.Usage{}); err != nil {
		t.Fatal(err)
	}
	c.set(time.Date(2026, 3, 11, 0, 0, 1, 0, time.UTC))
	if _, err := call(t, m, "a", b, wire.Usage{}); err != nil {
		t.Fatalf("after midnight: %v", err)
	}
	// A zone moves the boundary: midnight in Tokyo is 15:00 UTC.
	tz := []manifest.Budget{{Unit: "requests", Limit: 1, Per: "day", TZ: "Asia/Tokyo"}}
	c.set(time.Date(2026, 3, 11, 14, 0, 0, 0, time.UTC))
	call(t, m, "a", tz, wire.Usage{})
	if _, err := call(t, m, "a", tz, wire.Usage{}); err == nil {
		t.Fatal("second request in the Tokyo day admitted")
	} else if r, _ := AsRefusal(err); !r.ResetsAt.Equal(time.Date(2026, 3, 11, 15, 0, 0, 0, time.UTC)) {
		t.Fatalf("resets_at = %v", r.ResetsAt)
	}
	c.set(time.Date(2026, 3, 11, 15, 0, 0, 0, time.UTC))
	if _, err := call(t, m, "a", tz, wire.Usage{}); err != nil {
		t.Fatalf("after Tokyo midnight: %v", err)
	}
}

func TestWindows(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 30, 15, 0, time.UTC) // a Thursday
	for _, c := range []struct {
		per        string
		start, end time.Time
	}{
		{"minute", time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC), time.Date(2026, 1, 1, 10, 31, 0, 0, time.UTC)},
		{"hour", time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)},
		{"week", time.Date(2025, 12, 29, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)},
		{"month", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
	} {
		s, e := window(c.per, now, time.UTC)
		if !s.Equal(c.start) || !e.Equal(c.end) {
			t.Errorf("%s: [%v, %v), want [%v, %v)", c.per, s, e, c.start, c.end)
		}
	}
}

func TestUSDBudgetAndUnpricedModel(t *testing.T) {
	m, _ := New(Options{})
	b := []manifest.Budget{{Unit: "usd", Limit: 30_000, Per: "total"}}
	// $0.025 per call: the second is admitted (0.025 < 0.03), the third refused.
	u := wire.Usage{Input: 10_000, CachedInput: 8000, Output: 1000}
	for i := 0; i < 2; i++ {
		if c, err := call(t, m, "a", b, u); err != nil || c != audit.KnownCost(25_000) {
			t.Fatalf("call %d: %v %+v", i, err, c)
		}
	}
	_, err := call(t, m, "a", b, u)
	if r, ok := AsRefusal(err); !ok || r.Spent != 50_000 || !r.ResetsAt.IsZero() {
		t.Fatalf("third: %v", err)
	} else if f := r.Fields(); f["limit"] != jsonNumber("0.03") || f["spent"] != jsonNumber("0.05") || f["resets_at"] != nil {
		t.Fatalf("fields = %v", f)
	}
	turn, _ := m.Open("a", b, "")
	err = turn.Admit(context.Background(), Estimate{Model: "local/none"})
	if r, ok := AsRefusal(err); !ok || r.Status != 403 || r.Type != TypeUnenforceable || r.Fields()["model"] != "local/none" {
		t.Fatalf("unpriced under a USD budget: %v", err)
	}
	// Without a USD budget it is admitted, its cost unknown.
	turn, _ = m.Open("a", nil, "")
	if err := turn.Admit(context.Background(), Estimate{Model: "local/none"}); err != nil {
		t.Fatal(err)
	}
	if c := turn.Settle(context.Background(), u, true); !c.Unknown() {
		t.Fatalf("cost of an unpriced model = %+v", c)
	}
}

func TestFiftyConcurrentAtTheEdge(t *testing.T) {
	m, _ := New(Options{})
	limit := int64(100_000) // $0.10; each call costs $0.025 for real
	b := []manifest.Budget{{Unit: "usd", Limit: limit, Per: "total"}}
	u := wire.Usage{Input: 10_000, CachedInput: 8000, Output: 1000}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn, _ := m.Open("a", b, "")
			<-start
			if turn.Admit(context.Background(), Estimate{Model: "openai/gpt-4o", PromptBytes: 10_000, MaxOutput: 1000}) == nil {
				turn.Settle(context.Background(), u, true)
			}
		}()
	}
	close(start)
	wg.Wait()
	spent, _ := m.o.Ledger.Spent(context.Background(), []string{"agent:a:usd:total"})
	// Without reservations all 50 would pass the check at once ($1.25).
	if spent[0] > limit+25_000 || spent[0] == 0 {
		t.Fatalf("spent %d µUSD against a limit of %d (one call costs 25000)", spent[0], limit)
	}
}

func TestSpendSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spend.json")
	l, err := OpenFileLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := New(Options{Ledger: l})
	b := []manifest.Budget{{Unit: "tokens", Limit: 1000, Per: "month"}}
	if _, err := call(t, m, "a", b, wire.Usage{Input: 600, Output: 500}); err != nil {
		t.Fatal(err)
	}
	l2, err := OpenFileLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := New(Options{Ledger: l2})
	if _, err := call(t, m2, "a", b, wire.Usage{}); err == nil {
		t.Fatal("after a restart the spent budget admitted a call")
	}
}

func jsonNumber(s string) any { return json.Number(s) }

func TestReplicasShareOneBudgetOverRedis(t *testing.T) {
	url := redisURL(t)
	var meters []*Meter
	for i := 0; i < 3; i++ {
		c, err := sharedstate.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		m, _ := New(Options{Ledger: NewRedisLedger(c, "desk")})
		meters = append(meters, m)
	}
	b := []manifest.Budget{{Unit: "requests", Limit: 30, Per: "hour"}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := 0; i < 90; i++ {
		wg.Add(1)
		go func(m *Meter) {
			defer wg.Done()
			turn, _ := m.Open("a", b, "")
			if turn.Admit(context.Background(), gpt) == nil {
				turn.Settle(context.Background(), wire.Usage{}, true)
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}(meters[i%3])
	}
	wg.Wait()
	if admitted != 30 {
		t.Fatalf("three replicas admitted %d requests under a limit of 30", admitted)
	}
}

func redisURL(tb testing.TB) string {
	return testproc.Redis(tb)
}

// Status reports each budget's current window as the console shows it:
// what was settled in it, its limit and when it resets; a new window
// starts at zero.
func TestStatusReportsTheCurrentWindow(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	m, err := New(Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	b := []manifest.Budget{{Unit: "requests", Limit: 5, Per: "day"}, {Unit: "tokens", Limit: 1000, Per: "conversation"}}
	for i := 0; i < 3; i++ {
		if _, err := call(t, m, "a", b, wire.Usage{Input: 10, Output: 5}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := m.Status(context.Background(), "a", b)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Unit != "requests" || st[0].Spent != 3 || st[0].Limit != 5 || st[0].Scope != ScopeAgent ||
		!st[0].ResetsAt.Equal(time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("status %+v, want the day's 3 of 5 requests (conversation budgets left out)", st)
	}
	c.set(time.Date(2026, 3, 11, 0, 0, 1, 0, time.UTC))
	if st, _ := m.Status(context.Background(), "a", b); len(st) != 1 || st[0].Spent != 0 {
		t.Fatalf("next day's status %+v, want 0 spent", st)
	}
}

// A conversation's counter holds while the conversation goes on, across
// a restart, and is forgotten once it was idle ConversationIdle: the
// ledger does not keep every conversation ever held.
func TestConversationCounterIsForgottenWhenIdle(t *testing.T) {
	c := &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "spend.json")
	open := func() *Meter {
		l, err := OpenFileLedger(path, c.now)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(Options{Now: c.now, Ledger: l})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	b := []manifest.Budget{{Unit: "requests", Limit: 2, Per: PerConversation}}
	turn := func(m *Meter, conversation string) error {
		tr, err := m.Open("a", b, conversation)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close(context.Background())
		if err := tr.Admit(context.Background(), gpt); err != nil {
			return err
		}
		tr.Settle(context.Background(), wire.Usage{Input: 1, Output: 1}, true)
		return nil
	}
	m := open()
	for i := 0; i < 2; i++ {
		if err := turn(m, "k"); err != nil {
			t.Fatal(err)
		}
	}
	c.set(c.now().Add(ConversationIdle - 24*time.Hour))
	if _, refused := AsRefusal(turn(open(), "k")); !refused {
		t.Fatal("the conversation's third request, after a restart, was admitted")
	}
	raw, _ := os.ReadFile(path)
	c.set(c.now().Add(ConversationIdle + time.Hour))
	if err := turn(open(), "k"); err != nil {
		t.Fatalf("a conversation idle for %v is still counted: %v (ledger %s)", ConversationIdle, err, raw)
	}
}
