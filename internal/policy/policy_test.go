package policy

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

func tool(name string, readOnly bool, when ...string) *manifest.Tool {
	svc, _, _ := manifest.SplitToolName(name)
	return &manifest.Tool{Name: name, When: when, Annotations: &manifest.Annotations{ReadOnlyHint: &readOnly}, Execution: manifest.Execution{Service: svc}}
}

// The spec's three examples, each flipping as its input changes.
const (
	marketHours = `now.getDayOfWeek("America/New_York") >= 1 && now.getDayOfWeek("America/New_York") <= 5 && ` +
		`now.getHours("America/New_York") >= 9 && now.getHours("America/New_York") < 16`
	noSideEffectsInAlert = `!(has(feeds.alerts) && feeds.alerts.level == "critical") || tool.annotations.readOnlyHint == true`
	afterContext         = `"trading-api.get_market_context" in session.called`
)

func TestSpecExamplesFlip(t *testing.T) {
	m := &manifest.Tools{Rules: []manifest.Rule{{ID: "r1", When: marketHours}, {ID: "r2", When: noSideEffectsInAlert}, {ID: "r3", When: afterContext}}}
	ev := NewEvaluator()
	ny, _ := time.LoadLocation("America/New_York")
	trade := tool("trading-api.execute_trade", false, "r1")
	// Time of day: a Tuesday at 10:30 and at 17:00 in New York, a Saturday.
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{time.Date(2026, 11, 24, 10, 30, 0, 0, ny), true},
		{time.Date(2026, 11, 24, 17, 0, 0, 0, ny), false},
		{time.Date(2026, 11, 28, 10, 30, 0, 0, ny), false},
		{time.Date(2026, 11, 24, 15, 30, 0, 0, time.UTC), true}, // 10:30 in New York
	} {
		if ok, _ := ev.For(m, Input{Now: c.at}).Allowed(trade); ok != c.want {
			t.Errorf("market hours at %s: %v, want %v", c.at, ok, c.want)
		}
	}
	// Alert-driven restriction: side effects off while the feed says
	// critical; read-only tools stay.
	write := tool("trading-api.execute_trade", false, "r2")
	read := tool("trading-api.get_market_context", true, "r2")
	for _, c := range []struct {
		feeds        map[string]any
		write, read  bool
		feedsComment string
	}{
		{nil, true, true, "no alerts feed fetched yet"},
		{map[string]any{"alerts": FeedValue([]byte(`{"level":"ok"}`))}, true, true, "ok"},
		{map[string]any{"alerts": FeedValue([]byte(`{"level":"critical","note":"halt"}`))}, false, true, "critical"},
		{map[string]any{"alerts": FeedValue([]byte(`plain text`))}, false, true, "not JSON: the rule fails, which denies"},
	} {
		r := ev.For(m, Input{Feeds: c.feeds})
		okW, dW := r.Allowed(write)
		okR, _ := r.Allowed(read)
		if okW != c.write || okR != c.read {
			t.Errorf("alerts %s: write %v read %v, want %v %v (%+v)", c.feedsComment, okW, okR, c.write, c.read, dW)
		}
	}
	// Session-scoped escalation.
	esc := tool("trading-api.execute_trade", false, "r3")
	if ok, d := ev.For(m, Input{}).Allowed(esc); ok || len(d.Rules) != 1 || d.Rules[0] != "r3" {
		t.Errorf("before get_market_context: %v %+v", ok, d)
	}
	if ok, _ := ev.For(m, Input{Session: Session{Called: []string{"trading-api.get_market_context"}, Rounds: 1}}).Allowed(esc); !ok {
		t.Error("after get_market_context the trade must be offered")
	}
}

// A tool is available while any of its rules holds (grants are a union);
// a rule that fails to evaluate denies, and says why.
func TestUnionAndFailClosed(t *testing.T) {
	m := &manifest.Tools{Rules: []manifest.Rule{{ID: "r1", When: `false`}, {ID: "r2", When: `feeds.missing == 1`}, {ID: "r3", When: `true`}, {ID: "r4", When: `bogus(`}}}
	r := NewEvaluator().For(m, Input{})
	if ok, _ := r.Allowed(tool("a.t", true, "r1", "r3")); !ok {
		t.Error("one rule holding is enough")
	}
	if ok, _ := r.Allowed(tool("a.t", true)); !ok {
		t.Error("no rule: always available")
	}
	ok, d := r.Allowed(tool("a.t", true, "r1", "r2"))
	if ok || d.Err == nil || !strings.Contains(d.Err.Error(), "r2") {
		t.Errorf("a failing rule must deny with its error: %v %+v", ok, d)
	}
	ok, d = r.Allowed(tool("a.t", true, "r4"))
	if ok || d.Err == nil || !strings.Contains(d.Err.Error(), "does not compile") {
		t.Errorf("a rule that does not compile must deny: %v %+v", ok, d)
	}
	av, den := r.Filter([]*manifest.Tool{tool("a.x", true, "r1"), tool("a.y", true, "r3")})
	if len(av) != 1 || av[0].Name != "a.y" || len(den) != 1 || den[0].Tool != "a.x" {
		t.Errorf("filter: %v %+v", av, den)
	}
	// The one-shot forms say the same.
	ev := NewEvaluator()
	av, den = ev.Filter(m, []*manifest.Tool{tool("a.x", true, "r1"), tool("a.y", true, "r3")}, Input{})
	if len(av) != 1 || av[0].Name != "a.y" || len(den) != 1 || den[0].Tool != "a.x" || den[0].Rules[0] != "r1" {
		t.Errorf("Evaluator.Filter: %v %+v", av, den)
	}
	if ok, d := ev.Allowed(m, tool("a.t", true, "r2"), Input{}); ok || d.Err == nil {
		t.Errorf("Evaluator.Allowed: %v %+v", ok, d)
	}
}

// Compile-time checks name the problem and its position.
func TestCheckErrors(t *testing.T) {
	for expr, want := range map[string]string{
		`feed.x`:                  "1:1: undeclared reference to 'feed'",
		`agent.idd == "a"`:        "undefined field 'idd'",
		`1 + 1`:                   "must give a bool",
		`now.getHours( >= 9`:      "1:",
		``:                        "empty",
		strings.Repeat("a", 5000): "at most 4096",
	} {
		err := Check(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%.30q) = %v, want %q", expr, err, want)
		}
	}
	for _, ok := range []string{marketHours, noSideEffectsInAlert, afterContext, `agent.type == "openclaw" && session.rounds < 3`, `tool.service == "trading-api"`} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v", ok, err)
		}
	}
}

// An expression that would run long is stopped by the cost limit, which
// denies.
func TestCostLimit(t *testing.T) {
	r, err := Compile(`session.called.all(a, session.called.all(b, session.called.all(c, a + b + c != "")))`)
	if err != nil {
		t.Fatal(err)
	}
	called := make([]string, 200)
	for i := range called {
		called[i] = fmt.Sprint(i)
	}
	if _, err := r.Eval(&Input{Session: Session{Called: called}}, nil); err == nil {
		t.Fatal("8 million steps ran to the end")
	}
}

// Values read from feeds are dyn: their operators are dispatched at run
// time, and are charged by what they do all the same. Without that, each
// of these copies a 1 MB feed 20,000 times (seconds) under the limit.
func TestCostLimitDynamic(t *testing.T) {
	big := strings.Repeat("abcdefghij", 100_000)
	list := make([]any, 20_000)
	for i := range list {
		list[i] = "item"
	}
	in := &Input{Feeds: map[string]any{"big": big, "list": list}}
	for _, expr := range []string{
		`feeds.list.exists(x, (x + feeds.big).size() == 0)`,
		`feeds.list.map(x, x + feeds.big).size() > 0`,
		`feeds.list.exists(x, x in feeds.list && false)`,
		`feeds.list.exists(x, (feeds.list + feeds.list).size() == 0)`,
	} {
		r, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = r.Eval(in, nil)
		if err == nil || !strings.Contains(err.Error(), "cost limit") {
			t.Errorf("%s: %v, want the cost limit", expr, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s ran %v before it was stopped", expr, d)
		}
	}
	// Small values cost what they did.
	r, _ := Compile(`"x" + feeds.s in feeds.l && feeds.s < "z"`)
	if ok, err := r.Eval(&Input{Feeds: map[string]any{"s": "a", "l": []any{"xa"}}}, nil); !ok || err != nil {
		t.Errorf("small operands: %v, %v", ok, err)
	}
}

// BenchmarkRequest50Tools10Rules is a request's policy cost: 50 tools,
// 10 rules (five about the tool, five not), every tool under two rules.
func BenchmarkRequest50Tools10Rules(b *testing.B) {
	m := &manifest.Tools{}
	exprs := []string{marketHours, noSideEffectsInAlert, afterContext, `tool.service == "svc"`, `agent.id != "blocked"`,
		`tool.annotations.readOnlyHint == true || session.rounds > 1`, `has(feeds.alerts)`, `tool.name.startsWith("svc.")`, `session.rounds < 100`, `tool.name != "svc.t7"`}
	for i, e := range exprs {
		m.Rules = append(m.Rules, manifest.Rule{ID: fmt.Sprintf("r%d", i+1), When: e})
	}
	// The tools are the manifest's own, as cllama passes them.
	for i := range 50 {
		m.Tools = append(m.Tools, *tool(fmt.Sprintf("svc.t%d", i), i%2 == 0, fmt.Sprintf("r%d", i%10+1), fmt.Sprintf("r%d", (i+3)%10+1)))
	}
	tools := make([]*manifest.Tool, len(m.Tools))
	for i := range m.Tools {
		tools[i] = &m.Tools[i]
	}
	ev := NewEvaluator()
	in := Input{Now: time.Now(), Agent: Agent{ID: "a"}, Feeds: map[string]any{"alerts": map[string]any{"level": "ok"}}, Session: Session{Called: []string{"x"}, Rounds: 2}}
	b.ReportAllocs()
	for b.Loop() {
		av, _ := ev.For(m, in).Filter(tools)
		if len(av) == 0 {
			b.Fatal("nothing available")
		}
	}
}

// The zone-taking accessors give CEL's results (0-based month and day of
// month, 1-based date, offsets as well as names).
func TestZoneAccessors(t *testing.T) {
	at := time.Date(2026, 3, 1, 2, 30, 15, 250e6, time.UTC) // 1 March, 02:30:15.250 UTC
	for expr, want := range map[string]bool{
		`now.getHours("America/New_York") == 21`:      true, // 28 February, 21:30 in New York
		`now.getDate("America/New_York") == 28`:       true,
		`now.getDayOfMonth("America/New_York") == 27`: true,
		`now.getMonth("America/New_York") == 1`:       true, // February
		`now.getFullYear("+05:30") == 2026`:           true,
		`now.getMinutes("+05:30") == 0`:               true, // 08:00 in India
		`now.getMinutes("-03:30") == 0`:               true, // 23:00 the day before
		`now.getDayOfYear("UTC") == 59`:               true,
		`now.getDayOfWeek("UTC") == 0`:                true, // Sunday
		`now.getSeconds("Europe/Paris") == 15`:        true,
		`now.getMilliseconds("Asia/Tokyo") == 250`:    true,
		`now.getHours() == 2`:                         true, // UTC, no zone: CEL's own
	} {
		r, err := Compile(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		got, err := r.Eval(&Input{Now: at}, nil)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v", expr, got, err)
		}
	}
	r, _ := Compile(`now.getHours("Mars/Olympus") == 1`)
	if _, err := r.Eval(&Input{Now: at}, nil); err == nil {
		t.Error("an unknown zone must fail (and so deny)")
	}
}

// The views of tools are built with the rules, for the manifest's own
// tools; a tool from elsewhere is evaluated all the same but adds nothing
// to what the evaluator keeps.
func TestToolViewsBounded(t *testing.T) {
	m := &manifest.Tools{Rules: []manifest.Rule{{ID: "r1", When: `tool.service == "a"`}}}
	m.Tools = []manifest.Tool{*tool("a.x", true, "r1"), *tool("a.y", true)}
	ev := NewEvaluator()
	r := ev.For(m, Input{})
	if ok, _ := r.Allowed(&m.Tools[0]); !ok {
		t.Fatal("a.x: tool.service is a")
	}
	for range 100 {
		if ok, _ := r.Allowed(tool("a.z", true, "r1")); !ok {
			t.Fatal("a.z: tool.service is a")
		}
		if ok, _ := r.Allowed(tool("b.z", true, "r1")); ok {
			t.Fatal("b.z: tool.service is b")
		}
	}
	if n := len(ev.rules(m).views); n != 1 {
		t.Errorf("%d views kept, want 1 (the manifest's tool under a rule)", n)
	}
}

// A feed body is parsed when it is JSON, any JSON; otherwise it is text.
func TestFeedValue(t *testing.T) {
	for body, want := range map[string]any{
		`{"level":"critical"}`: map[string]any{"level": "critical"},
		" [1, 2]\n":            []any{1.0, 2.0},
		`"halt"`:               "halt",
		`42`:                   42.0,
		`true`:                 true,
		`null`:                 nil,
		`level: critical`:      "level: critical",
		`{"level":`:            `{"level":`,
		"":                     "",
	} {
		if got := FeedValue([]byte(body)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("FeedValue(%q) = %#v, want %#v", body, got, want)
		}
	}
	for expr, want := range map[string]bool{
		`feeds.n > 3 && feeds.n == 42`:               true,
		`feeds.o.count >= 5 && feeds.o.ok`:           true,
		`feeds.text.startsWith("all quiet")`:         true,
		`!has(feeds.absent) && !("absent" in feeds)`: true,
	} {
		r, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		feeds := map[string]any{"n": FeedValue([]byte("42\n")), "o": FeedValue([]byte(`{"count": 5, "ok": true}`)), "text": FeedValue([]byte("all quiet\n"))}
		if got, err := r.Eval(&Input{Feeds: feeds}, nil); err != nil || got != want {
			t.Errorf("%s = %v, %v", expr, got, err)
		}
	}
}

// Requests of many goroutines share one compilation per manifest, and a
// manifest no longer used takes its compiled rules with it.
func TestEvaluatorCache(t *testing.T) {
	ev := NewEvaluator()
	newManifest := func() *manifest.Tools {
		m := &manifest.Tools{Rules: []manifest.Rule{{ID: "r1", When: afterContext}, {ID: "r2", When: noSideEffectsInAlert}}}
		m.Tools = []manifest.Tool{*tool("trading-api.execute_trade", false, "r1", "r2"), *tool("trading-api.get_market_context", true)}
		return m
	}
	m := newManifest()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			// Even goroutines: the context was read, the trade is
			// offered. Odd: it was not and an alert is critical, so it
			// is not.
			in, want := Input{Session: Session{Called: []string{"trading-api.get_market_context"}}}, 2
			if g%2 == 1 {
				in, want = Input{Feeds: map[string]any{"alerts": map[string]any{"level": "critical"}}}, 1
			}
			for range 100 {
				if av, _ := ev.Filter(m, []*manifest.Tool{&m.Tools[0], &m.Tools[1]}, in); len(av) != want {
					t.Errorf("goroutine %d: %d available, want %d", g, len(av), want)
					return
				}
			}
		})
	}
	wg.Wait()
	first := ev.rules(m)
	if ev.rules(m) != first {
		t.Fatal("a manifest's rules are compiled once")
	}
	for range 10 {
		ev.For(newManifest(), Input{})
	}
	runtime.KeepAlive(m)
	m = nil
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		n := ev.cache.Len()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d manifests' rules kept after they were dropped", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
