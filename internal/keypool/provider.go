package keypool

import (
	"sync"
	"time"
)

// CircuitState is a circuit's state, as the metrics report it.
type CircuitState int

// Circuit states: closed (requests go), open (requests go to the
// fallback), half-open (one probe goes).
const (
	Closed   CircuitState = 0
	Open     CircuitState = 1
	HalfOpen CircuitState = 2
)

// KeyStatus is a key's state, as the metrics report it.
type KeyStatus int

// Key states.
const (
	KeyActive      KeyStatus = 0
	KeyCooling     KeyStatus = 1
	KeyDead        KeyStatus = 2
	KeyCircuitOpen KeyStatus = 3
)

// circuit is a breaker: it opens after a number of failures in a row,
// lets one probe through once it has been open for its time, and closes
// when the probe succeeds (or opens again when it fails).
type circuit struct {
	fails   int
	open    bool
	until   time.Time
	probing bool
}

// allow reports whether a request may go, and whether it is the probe.
func (c *circuit) allow(now time.Time, openFor time.Duration) (ok, probe bool) {
	if !c.open {
		return true, false
	}
	if now.Before(c.until) {
		return false, false
	}
	if c.probing && now.Before(c.until.Add(openFor)) {
		return false, false // a probe is out (one that never came back is replaced)
	}
	c.probing = true
	c.until = now // a forgotten probe is replaced openFor after it left
	return true, true
}

// success records an answer; closed reports that it closed the circuit.
func (c *circuit) success() (closed bool) {
	c.fails = 0
	c.probing = false
	if c.open {
		c.open = false
		return true
	}
	return false
}

// failure records a failure; opened reports that it opened the circuit.
func (c *circuit) failure(now time.Time, failures int, openFor time.Duration) (opened bool) {
	c.fails++
	wasProbe := c.probing
	c.probing = false
	if c.open && wasProbe {
		c.until = now.Add(openFor)
		return false
	}
	if !c.open && c.fails >= failures {
		c.open, c.until = true, now.Add(openFor)
		return true
	}
	return false
}

func (c *circuit) state(now time.Time) CircuitState {
	switch {
	case !c.open:
		return Closed
	case now.Before(c.until) && !c.probing:
		return Open
	}
	return HalfOpen
}

// keyState is one key of a pool.
type keyState struct {
	Key
	ref       string
	coolUntil time.Time
	dead      bool
	// strikes counts limits in a row (the backoff's exponent).
	strikes int
	fails   int
	circuit circuit
	// alerted: a cooldown or death was alerted; the next success is a
	// recovery.
	alerted bool
}

// Provider is one provider's pool and circuit. Safe for concurrent use.
type Provider struct {
	ps   *Pools
	name string
	gen  string

	mu      sync.Mutex
	keys    []keyState
	next    uint32
	circuit circuit
}

// Name is the provider's name.
func (p *Provider) Name() string { return p.name }

// Pick is the key chosen for one attempt.
type Pick struct {
	// Key is the index of the key to use (in the keys the pool was made
	// with), -1 for a provider without keys.
	Key    int
	Status Status
	// Wait is, for Cooling, the shortest time until a key is usable
	// again; for CircuitOpen, until the circuit lets a probe through.
	Wait time.Duration
	// probe and keyProbe: this attempt is the half-open probe of the
	// provider's circuit, of the key's.
	probe, keyProbe bool
}

// Pick chooses the key of the next attempt, among the keys not in tried
// (a set of key indexes the request has already tried), spreading
// requests over the usable keys in turn.
func (p *Provider) Pick(tried uint64) Pick {
	o := &p.ps.o
	now := o.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	ok, probe := p.circuit.allow(now, o.Open)
	if !ok {
		return Pick{Key: -1, Status: CircuitOpen, Wait: p.circuit.until.Sub(now)}
	}
	n := len(p.keys)
	if n == 0 {
		return Pick{Key: -1, Status: Ready, probe: probe}
	}
	start := int(p.next % uint32(n))
	p.next++
	var wait time.Duration
	cooling, keyOpen := false, false
	for i := range n {
		k := start + i
		if k >= n {
			k -= n
		}
		ks := &p.keys[k]
		if ks.dead {
			continue
		}
		if now.Before(ks.coolUntil) {
			if d := ks.coolUntil.Sub(now); !cooling || d < wait {
				wait = d
			}
			cooling = true
			continue
		}
		if tried&(1<<k) != 0 {
			continue
		}
		kok, kprobe := ks.circuit.allow(now, o.Open)
		if !kok {
			keyOpen = true
			continue
		}
		return Pick{Key: k, Status: Ready, probe: probe, keyProbe: kprobe}
	}
	if probe {
		p.circuit.probing = false // no key to probe with
	}
	switch {
	case cooling:
		return Pick{Key: -1, Status: Cooling, Wait: wait}
	case keyOpen:
		return Pick{Key: -1, Status: CircuitOpen}
	}
	return Pick{Key: -1, Status: Dead}
}

// Done records the outcome of the attempt pick was for. retryAfter is
// the provider's Retry-After for Limited (ok false: none given; the key
// then backs off).
func (p *Provider) Done(pick Pick, out Outcome, retryAfter time.Duration, ok bool) {
	if pick.Status != Ready {
		return
	}
	ps := p.ps
	o := &ps.o
	type alert struct {
		event, key string
		fields     map[string]any
	}
	var alerts []alert
	var changed *record
	var changedRef string

	p.mu.Lock()
	var ks *keyState
	if pick.Key >= 0 && pick.Key < len(p.keys) {
		ks = &p.keys[pick.Key]
	}
	switch out {
	case Abandoned:
		if pick.probe {
			p.circuit.probing = false
		}
		if ks != nil && pick.keyProbe {
			ks.circuit.probing = false
		}
	case Failed:
		now := o.Now()
		if p.circuit.failure(now, o.Failures, o.Open) {
			alerts = append(alerts, alert{EventCircuitOpen, "", map[string]any{"failures": p.circuit.fails, "open_seconds": o.Open.Seconds()}})
		}
		if ks != nil && ks.circuit.failure(now, o.Failures, o.Open) {
			alerts = append(alerts, alert{EventCircuitOpen, ks.ID, map[string]any{"failures": ks.circuit.fails, "open_seconds": o.Open.Seconds()}})
		}
	default:
		// The provider answered: it is up, whatever it said of the key.
		if p.circuit.success() {
			alerts = append(alerts, alert{EventCircuitClosed, "", nil})
		}
		if ks == nil {
			break
		}
		switch out {
		case Limited:
			now := o.Now()
			d := retryAfter
			if !ok {
				d = min(o.Backoff<<min(ks.strikes, 16), MaxBackoff)
			}
			ks.strikes++
			ks.coolUntil = now.Add(d)
			ks.alerted = true
			changed, changedRef = &record{CoolUntilMS: ks.coolUntil.UnixMilli()}, ks.ref
			alerts = append(alerts, alert{EventKeyCooldown, ks.ID, map[string]any{"seconds": d.Seconds(), "until": ks.coolUntil.UTC().Format(time.RFC3339)}})
			if ks.circuit.success() {
				alerts = append(alerts, alert{EventCircuitClosed, ks.ID, nil})
			}
		case Invalid:
			ks.dead, ks.alerted = true, true
			changed, changedRef = &record{DeadGen: p.gen}, ks.ref
			alerts = append(alerts, alert{EventKeyDead, ks.ID, map[string]any{"fix": "replace the key in the pod file (x-claw.cllama-defaults.providers) and run claw compile, or edit providers.json"}})
		default:
			ks.strikes = 0
			if ks.circuit.success() {
				alerts = append(alerts, alert{EventCircuitClosed, ks.ID, nil})
			}
			if ks.alerted {
				ks.alerted = false
				changed, changedRef = &record{}, ks.ref
				alerts = append(alerts, alert{EventKeyRecovered, ks.ID, nil})
			}
		}
	}
	p.mu.Unlock()

	if changed != nil {
		ps.record(changedRef, *changed)
	}
	for _, a := range alerts {
		ps.alert(a.event, p.name, a.key, a.fields)
	}
}

// ProviderState is a provider's circuit and keys, for metrics.
type ProviderState struct {
	Provider string
	Circuit  CircuitState
	Keys     []KeyState
}

// KeyState is a key's state, for metrics: its id, never its secret.
type KeyState struct {
	ID    string
	State KeyStatus
}

// Snapshot returns the state of every provider's circuit and keys.
func (ps *Pools) Snapshot() []ProviderState {
	now := ps.o.Now()
	ps.mu.Lock()
	provs := make([]*Provider, 0, len(ps.providers))
	for _, p := range ps.providers {
		provs = append(provs, p)
	}
	ps.mu.Unlock()
	out := make([]ProviderState, 0, len(provs))
	for _, p := range provs {
		p.mu.Lock()
		st := ProviderState{Provider: p.name, Circuit: p.circuit.state(now), Keys: make([]KeyState, len(p.keys))}
		for i := range p.keys {
			ks := &p.keys[i]
			s := KeyActive
			switch {
			case ks.dead:
				s = KeyDead
			case now.Before(ks.coolUntil):
				s = KeyCooling
			case ks.circuit.state(now) != Closed:
				s = KeyCircuitOpen
			}
			st.Keys[i] = KeyState{ID: ks.ID, State: s}
		}
		p.mu.Unlock()
		out = append(out, st)
	}
	return out
}
