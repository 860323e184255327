// Package keypool keeps the health of cllama's provider keys and
// providers: which key of a provider's pool serves the next request
// (spread over the keys that can), which keys cool down after a 429 (for
// the provider's Retry-After, else a backoff) or are dead after a 401
// (until providers.json changes), and a circuit breaker per provider and
// per key that opens after consecutive failures, lets one probe through
// once it has been open for a while, and closes when the probe succeeds.
//
// Key state (cooldowns, dead keys) survives a restart in a file under the
// state directory and, with a Shared store (Redis, CLLAMA_STATE_URL), is
// shared by replicas. Circuits are each replica's own: each sees its own
// failures. It never holds a key's secret: a key is its id in
// providers.json and a short fingerprint of its secret.
package keypool

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/alerts"
)

// Defaults of the circuit breaker and of a cooldown without Retry-After.
const (
	DefaultCircuitFailures = 5
	DefaultCircuitOpen     = 30 * time.Second
	// DefaultBackoff is the first cooldown of a key limited without a
	// Retry-After; each further one in a row doubles it, up to MaxBackoff.
	DefaultBackoff = time.Second
	MaxBackoff     = time.Minute
	// MaxCooldown bounds the Retry-After a key is cooled down for.
	MaxCooldown = time.Hour
	// MaxKeys bounds a provider's pool (a pick tracks the keys a request
	// tried in a 64-bit set).
	MaxKeys = 64
)

// Alert events (the pod's alert webhook).
const (
	EventKeyCooldown   = "key_cooldown"
	EventKeyDead       = "key_dead"
	EventKeyRecovered  = "key_recovered"
	EventCircuitOpen   = "circuit_open"
	EventCircuitClosed = "circuit_closed"
)

// Alerter is where alerts go: the pod's alert webhook (alerts.Sink).
// Alert never blocks; the fields never carry a secret.
type Alerter interface {
	Alert(event string, fields map[string]any)
}

// Options configure Pools.
type Options struct {
	// Failures is how many failures in a row open a circuit
	// (DefaultCircuitFailures when 0); Open how long it stays open before
	// a probe (DefaultCircuitOpen when 0).
	Failures int
	Open     time.Duration
	// Backoff is the first cooldown of a key limited without a
	// Retry-After (DefaultBackoff when 0).
	Backoff time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Alerts receives key and circuit alerts (none when nil), at most
	// AlertBurst per event and provider every AlertEvery.
	Alerts     Alerter
	AlertBurst int
	AlertEvery time.Duration
	// StateFile, when set, keeps key state across restarts.
	StateFile string
	// Shared, when set, shares key state with other replicas.
	Shared Shared
	// OnError reports a failure to persist or share state (the request
	// goes on with what this replica knows).
	OnError func(error)
}

// Outcome is what became of a request sent with a key.
type Outcome int

const (
	// OK: the provider answered (any status that says nothing about the
	// key or the provider's health: 2xx, most 4xx).
	OK Outcome = iota
	// Limited: 429 or the provider's overloaded status; the key cools down.
	Limited
	// Invalid: the provider refused the key itself (401); it is dead
	// until providers.json changes.
	Invalid
	// Failed: 5xx, a connection error or the first-byte timeout: counts
	// towards the circuits.
	Failed
	// Abandoned: the runner went away before the answer; says nothing.
	Abandoned
)

// Status is what a Pick found.
type Status int

const (
	// Ready: Key may be used.
	Ready Status = iota
	// Cooling: every key not yet tried is cooling down; Wait is the
	// shortest time until one is usable again.
	Cooling
	// Dead: every key not yet tried is dead (or there is none).
	Dead
	// CircuitOpen: the provider's circuit is open (or every usable key's).
	CircuitOpen
)

// String names a status for logs and error messages.
func (s Status) String() string {
	switch s {
	case Ready:
		return "ready"
	case Cooling:
		return "cooling"
	case Dead:
		return "dead"
	}
	return "circuit_open"
}

// Key is one key of a pool as the pool knows it: never its secret.
type Key struct {
	ID string
	// Fingerprint is a short hash of the secret (Fingerprint): a key id
	// given a new secret is a new key.
	Fingerprint string
}

// Fingerprint is a short, non-reversible name of a secret.
func Fingerprint(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:6])
}

// Generation names a version of the providers' configuration (the
// providers.json bytes): dead keys stay dead within one generation.
func Generation(config []byte) string {
	h := sha256.Sum256(config)
	return hex.EncodeToString(h[:8])
}

// ParseRetryAfter reads a Retry-After header (seconds, or an HTTP date
// relative to now). ok is false when it is absent or unreadable. The
// result is within [0, MaxCooldown].
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 64 {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs != secs || secs < 0 { // NaN or negative
			return 0, false
		}
		if secs >= MaxCooldown.Seconds() {
			return MaxCooldown, true
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(at.Sub(now), 0), MaxCooldown), true
}

// Pools are the pools of every provider.
type Pools struct {
	o      Options
	alerts *alerts.Limiter

	mu        sync.Mutex
	providers map[string]*Provider
	// records are the key states known by reference (provider/id/fp),
	// loaded or shared before the pool that uses them is built.
	records map[string]record

	persist *persister
}

// New returns the pools, with the key state of the state file and of
// the shared store.
func New(o Options) (*Pools, error) {
	if o.Failures <= 0 {
		o.Failures = DefaultCircuitFailures
	}
	if o.Open <= 0 {
		o.Open = DefaultCircuitOpen
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AlertBurst <= 0 {
		o.AlertBurst = 3
	}
	if o.AlertEvery <= 0 {
		o.AlertEvery = time.Minute
	}
	ps := &Pools{o: o, providers: map[string]*Provider{}, records: map[string]record{}}
	ps.alerts = alerts.NewLimiter(o.AlertEvery, o.AlertBurst).WithClock(o.Now)
	p, err := newPersister(ps, o.StateFile, o.Shared, o.OnError)
	if err != nil {
		return nil, err
	}
	ps.persist = p
	return ps, nil
}

// Close writes the state file and stops following the shared store.
func (ps *Pools) Close() error { return ps.persist.close() }

// Provider returns the pool of the provider name with keys, in the
// configuration generation gen: the same pool as before when the keys
// are the same (a reload keeps its state), else a pool of the new keys,
// which takes over the state of the keys it kept. At most MaxKeys keys
// are used.
func (ps *Pools) Provider(name string, keys []Key, gen string) *Provider {
	if len(keys) > MaxKeys {
		keys = keys[:MaxKeys]
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	old := ps.providers[name]
	if old != nil && old.gen == gen && sameKeys(old.keys, keys) {
		return old
	}
	p := &Provider{ps: ps, name: name, gen: gen, keys: make([]keyState, len(keys))}
	for i, k := range keys {
		ks := &p.keys[i]
		ks.Key, ks.ref = k, ref(name, k)
		if r, ok := ps.records[ks.ref]; ok {
			ks.coolUntil = r.coolUntil()
			ks.dead = r.DeadGen != "" && r.DeadGen == gen
		}
	}
	if old != nil {
		// Lock order: Pools.mu, then a Provider's mu.
		old.mu.Lock()
		for i := range p.keys {
			ks := &p.keys[i]
			for j := range old.keys {
				if o := &old.keys[j]; o.ref == ks.ref {
					ks.fails, ks.circuit, ks.strikes, ks.alerted = o.fails, o.circuit, o.strikes, o.alerted
				}
			}
		}
		p.circuit = old.circuit
		old.mu.Unlock()
	}
	ps.providers[name] = p
	return p
}

func sameKeys(ks []keyState, keys []Key) bool {
	if len(ks) != len(keys) {
		return false
	}
	for i := range ks {
		if ks[i].Key != keys[i] {
			return false
		}
	}
	return true
}

func ref(provider string, k Key) string { return provider + "/" + k.ID + "/" + k.Fingerprint }

// alert sends event for provider (and key, when not empty), rate limited
// per event and provider.
func (ps *Pools) alert(event, provider, key string, fields map[string]any) {
	if ps.o.Alerts == nil || !ps.alerts.Allow(event+"\x00"+provider) {
		return
	}
	if fields == nil {
		fields = map[string]any{}
	}
	fields["provider"] = provider
	if key != "" {
		fields["key"] = key
	}
	ps.o.Alerts.Alert(event, fields)
}

// applyShared takes a key state another replica (or the state file)
// recorded: the pool that has the key follows it.
func (ps *Pools) applyShared(refName string, r record) {
	ps.mu.Lock()
	if r.empty() {
		delete(ps.records, refName)
	} else {
		ps.records[refName] = r
	}
	var target *Provider
	for _, p := range ps.providers {
		if strings.HasPrefix(refName, p.name+"/") {
			target = p
		}
	}
	ps.mu.Unlock()
	if target == nil {
		return
	}
	target.mu.Lock()
	for i := range target.keys {
		if k := &target.keys[i]; k.ref == refName {
			k.coolUntil = r.coolUntil()
			k.dead = r.DeadGen != "" && r.DeadGen == target.gen
		}
	}
	target.mu.Unlock()
}

// record changes the stored state of a key: kept for pools built later,
// written to the state file and shared.
func (ps *Pools) record(refName string, r record) {
	ps.mu.Lock()
	if r.empty() {
		delete(ps.records, refName)
	} else {
		ps.records[refName] = r
	}
	ps.mu.Unlock()
	ps.persist.changed(refName, r)
}
