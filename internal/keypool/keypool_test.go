package keypool

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type recAlerts struct {
	mu     sync.Mutex
	events []string
	fields []map[string]any
}

func (a *recAlerts) Alert(event string, fields map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, event)
	a.fields = append(a.fields, fields)
}

func (a *recAlerts) count(event string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, e := range a.events {
		if e == event {
			n++
		}
	}
	return n
}

func keys(ids ...string) []Key {
	var out []Key
	for _, id := range ids {
		out = append(out, Key{ID: id, Fingerprint: Fingerprint("secret-" + id)})
	}
	return out
}

func newPools(t *testing.T, o Options) (*Pools, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	o.Now = c.now
	ps, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	return ps, c
}

func TestPickSpreadsOverKeys(t *testing.T) {
	ps, _ := newPools(t, Options{})
	p := ps.Provider("openai", keys("a", "b", "c"), "g")
	seen := map[int]int{}
	for range 30 {
		pk := p.Pick(0)
		if pk.Status != Ready {
			t.Fatalf("status %v", pk.Status)
		}
		seen[pk.Key]++
		p.Done(pk, OK, 0, false)
	}
	if len(seen) != 3 || seen[0] != 10 || seen[1] != 10 || seen[2] != 10 {
		t.Fatalf("picks %v, want 10 of each key", seen)
	}
}

func TestCooldownRetryAfterAndShortestWait(t *testing.T) {
	al := &recAlerts{}
	ps, c := newPools(t, Options{Alerts: al})
	p := ps.Provider("openai", keys("a", "b"), "g")
	pk := p.Pick(0)
	p.Done(pk, Limited, 20*time.Second, true)
	tried := uint64(1) << pk.Key
	pk2 := p.Pick(tried)
	if pk2.Status != Ready || pk2.Key == pk.Key {
		t.Fatalf("second pick %+v, want the other key", pk2)
	}
	p.Done(pk2, Limited, 7*time.Second, true)
	all := p.Pick(tried | 1<<pk2.Key)
	if all.Status != Cooling || all.Wait != 7*time.Second {
		t.Fatalf("all cooling: %+v, want Cooling with the shortest wait 7s", all)
	}
	// Without Retry-After: a backoff that doubles.
	c.add(8 * time.Second)
	pk3 := p.Pick(0)
	if pk3.Key != pk2.Key {
		t.Fatalf("after 8s the key cooled for 7s serves, got %+v", pk3)
	}
	p.Done(pk3, Limited, 0, false)
	// Its second limit in a row without Retry-After: 2s (the other key
	// has 12s left).
	if w := p.Pick(1 << pk3.Key).Wait; w != 2*time.Second {
		t.Fatalf("wait %v, want the doubled backoff 2s", w)
	}
	c.add(20 * time.Second)
	pk4 := p.Pick(0)
	p.Done(pk4, OK, 0, false)
	if al.count(EventKeyCooldown) != 3 || al.count(EventKeyRecovered) != 1 {
		t.Fatalf("alerts %v", al.events)
	}
	for _, f := range al.fields {
		for _, v := range f {
			if s, ok := v.(string); ok && len(s) > 6 && s[:7] == "secret-" {
				t.Fatalf("alert carries a secret: %v", f)
			}
		}
	}
}

func TestDeadKeySkippedUntilConfigChanges(t *testing.T) {
	ps, _ := newPools(t, Options{})
	p := ps.Provider("openai", keys("a", "b"), "g1")
	pk := p.Pick(0)
	p.Done(pk, Invalid, 0, false)
	for range 5 {
		if got := p.Pick(0); got.Key == pk.Key {
			t.Fatalf("dead key %d picked", pk.Key)
		}
	}
	if got := p.Pick(^uint64(0) &^ (1 << pk.Key)); got.Status != Dead {
		t.Fatalf("only the dead key left: %+v, want Dead", got)
	}
	// Same configuration reloaded: still dead; a new one: alive again.
	if got := ps.Provider("openai", keys("a", "b"), "g1").Pick(1 << (1 - pk.Key)); got.Status != Dead {
		t.Fatalf("same generation: %+v", got)
	}
	if got := ps.Provider("openai", keys("a", "b"), "g2").Pick(1 << (1 - pk.Key)); got.Status != Ready {
		t.Fatalf("new generation: %+v, want the key usable", got)
	}
}

func TestCircuitOpensProbesAndCloses(t *testing.T) {
	al := &recAlerts{}
	ps, c := newPools(t, Options{Alerts: al, Failures: 3, Open: 10 * time.Second})
	p := ps.Provider("anthropic", keys("a"), "g")
	for i := range 3 {
		pk := p.Pick(0)
		if pk.Status != Ready {
			t.Fatalf("failure %d: circuit open too early", i)
		}
		p.Done(pk, Failed, 0, false)
	}
	if pk := p.Pick(0); pk.Status != CircuitOpen || pk.Wait != 10*time.Second {
		t.Fatalf("after 3 failures: %+v, want CircuitOpen for 10s", pk)
	}
	if st := ps.Snapshot()[0].Circuit; st != Open {
		t.Fatalf("state %v", st)
	}
	c.add(10 * time.Second)
	probe := p.Pick(0)
	if probe.Status != Ready || !probe.probe {
		t.Fatalf("half-open: %+v, want the probe", probe)
	}
	if other := p.Pick(0); other.Status != CircuitOpen {
		t.Fatalf("a second request while the probe is out: %+v", other)
	}
	p.Done(probe, Failed, 0, false) // the probe fails: open again
	if pk := p.Pick(0); pk.Status != CircuitOpen {
		t.Fatalf("after a failed probe: %+v", pk)
	}
	c.add(10 * time.Second)
	probe = p.Pick(0)
	p.Done(probe, OK, 0, false)
	if pk := p.Pick(0); pk.Status != Ready {
		t.Fatalf("after a good probe: %+v", pk)
	}
	if st := ps.Snapshot()[0].Circuit; st != Closed {
		t.Fatalf("state %v", st)
	}
	if al.count(EventCircuitOpen) < 1 || al.count(EventCircuitClosed) < 1 {
		t.Fatalf("alerts %v", al.events)
	}
}

func TestAlertStormIsRateLimited(t *testing.T) {
	al := &recAlerts{}
	ps, _ := newPools(t, Options{Alerts: al})
	p := ps.Provider("openai", keys("a", "b", "c", "d"), "g")
	for range 200 {
		pk := p.Pick(0)
		if pk.Status == Ready {
			p.Done(pk, Limited, time.Millisecond, true)
		}
	}
	if n := al.count(EventKeyCooldown); n < 1 || n > 3 {
		t.Fatalf("%d key_cooldown alerts for a storm, want a handful (1-3)", n)
	}
}

func TestStateSurvivesRestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	ps, err := New(Options{StateFile: file, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	p := ps.Provider("openai", keys("a", "b", "c"), "g")
	a := p.Pick(0)
	p.Done(a, Invalid, 0, false)
	b := p.Pick(1 << a.Key)
	p.Done(b, Limited, time.Minute, true)
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := New(Options{StateFile: file, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	q := again.Provider("openai", keys("a", "b", "c"), "g")
	for range 6 {
		pk := q.Pick(0)
		if pk.Status != Ready || pk.Key == a.Key || pk.Key == b.Key {
			t.Fatalf("after a restart picked %+v; dead key %d and cooling key %d must be skipped", pk, a.Key, b.Key)
		}
	}
	st := again.Snapshot()[0].Keys
	if st[a.Key].State != KeyDead || st[b.Key].State != KeyCooling {
		t.Fatalf("states %+v", st)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "1.5", "30", "-1", "NaN", "Wed, 21 Oct 2015 07:28:00 GMT", "1e300", "abc"} {
		f.Add(s)
	}
	now := time.Date(2015, 10, 21, 7, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseRetryAfter(s, now)
		if ok && (d < 0 || d > MaxCooldown) {
			t.Fatalf("%q: %v out of range", s, d)
		}
	})
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"cool_until_ms":123,"dead_gen":"ab"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"cool_until_ms":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err == nil && (r.CoolUntilMS < 0 || len(r.DeadGen) > 64) {
			t.Fatalf("%q decoded out of range: %+v", b, r)
		}
	})
}
