package mediate

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"sync"
)

type memoKey struct {
	format string
	raw    [sha256.Size]byte
}

// stepKey is one step of a continuity chain: the chain so far, scoped to
// a format and an agent, and the digest of the next message's canonical
// form.
type stepKey struct {
	format, agent string
	prev          chain
	digest        [sha256.Size]byte
}

// stepMemo is where a step leads: the chain extended by the message and,
// once an assistant message asked for it, the continuity key there.
type stepMemo struct {
	next chain
	key  string
}

// canonCache remembers canonical digests of messages and the steps of
// continuity chains: runners resend the whole transcript every turn, so
// almost every message of a request, and the chain up to it, was computed
// before. Both are exact (a hit is what computing would give). Each is
// bounded by two generations: when the current one is full it becomes the
// old one and the previous old one is dropped, so memory stays within
// 2*max entries of each (about 100 and 250 bytes) without per-entry
// bookkeeping. It is safe for concurrent use.
type canonCache struct {
	mu    sync.Mutex
	canon generations[memoKey, canonMemo]
	steps generations[stepKey, stepMemo]
	// walks are the last transcript each agent sent, walked (bounded by
	// maxWalksBytes).
	walks     map[walkKey]*walk
	walkBytes int
}

func newCanonCache(max int) *canonCache {
	return &canonCache{canon: newGenerations[memoKey, canonMemo](max), steps: newGenerations[stepKey, stepMemo](max)}
}

func (c *canonCache) get(k memoKey) (canonMemo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.canon.get(k)
}

func (c *canonCache) put(k memoKey, v canonMemo) {
	c.mu.Lock()
	c.canon.put(k, v)
	c.mu.Unlock()
}

func (c *canonCache) step(k stepKey) (stepMemo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.steps.get(k)
}

func (c *canonCache) putStep(k stepKey, v stepMemo) {
	c.mu.Lock()
	c.steps.put(k, v)
	c.mu.Unlock()
}

// generations is a map bounded by two generations (not safe for
// concurrent use on its own).
type generations[K comparable, V any] struct {
	max      int
	cur, old map[K]V
}

func newGenerations[K comparable, V any](max int) generations[K, V] {
	return generations[K, V]{max: max, cur: make(map[K]V)}
}

func (g *generations[K, V]) get(k K) (V, bool) {
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	v, ok := g.old[k]
	if ok {
		g.put(k, v)
	}
	return v, ok
}

func (g *generations[K, V]) put(k K, v V) {
	if len(g.cur) >= g.max {
		g.old, g.cur = g.cur, make(map[K]V, g.max)
	}
	g.cur[k] = v
}

// walk is what restore computed over one transcript of an agent: the
// messages' bytes and, after each message, the chain and the continuity
// key of an assistant message. A runner resends the whole conversation
// every turn, so the next request shares all but its last messages with
// the previous one: restore takes the steps of the prefix it shares byte
// for byte from the walk and hashes only the rest. A walk is never
// changed once stored.
type walk struct {
	raw   []byte
	ends  []int // ends[i] is where message i ends in raw
	steps []walkStep
}

// walkStep is restore's state after a message.
type walkStep struct {
	c    chain
	lead int // where the hidden rounds of a later message would go
	// For an assistant message: its continuity key, and where the
	// hidden rounds stored under it go.
	key     string
	askLead int
}

type walkKey struct{ format, agent string }

// Bounds of the walks: one per agent and format, at most maxWalkBytes of
// transcript each (a longer one is walked from memory up to there), and
// maxWalksBytes for all of them together.
const (
	maxWalkBytes  = 1 << 20
	maxWalksBytes = 16 << 20
	walkStepBytes = 96 // a step's memory, its key included
)

// shared is how many leading messages of msgs are the walk's, byte for byte.
func (w *walk) shared(msgs []json.RawMessage) int {
	start := 0
	for i, end := range w.ends {
		if i == len(msgs) || !bytes.Equal(msgs[i], w.raw[start:end]) {
			return i
		}
		start = end
	}
	return len(w.ends)
}

func (w *walk) size() int { return len(w.raw) + len(w.steps)*walkStepBytes }

// newWalk copies the messages (as many as fit in maxWalkBytes) and their
// steps; nil when that is no more than the first known messages (a walk
// of them is stored already).
func newWalk(msgs []json.RawMessage, steps []walkStep, known int) *walk {
	n, total := 0, 0
	for n < len(msgs) && total+len(msgs[n]) <= maxWalkBytes {
		total += len(msgs[n])
		n++
	}
	if n <= known {
		return nil
	}
	w := &walk{raw: make([]byte, 0, total), ends: make([]int, n), steps: steps[:n:n]}
	for i, m := range msgs[:n] {
		w.raw = append(w.raw, m...)
		w.ends[i] = len(w.raw)
	}
	return w
}

func (c *canonCache) walk(k walkKey) *walk {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.walks[k]
}

// putWalk replaces k's walk; walks of other agents go (any of them) while
// all of them together are over maxWalksBytes.
func (c *canonCache) putWalk(k walkKey, w *walk) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.walks == nil {
		c.walks = map[walkKey]*walk{}
	}
	if old, ok := c.walks[k]; ok {
		c.walkBytes -= old.size()
	}
	c.walks[k] = w
	c.walkBytes += w.size()
	for other, ow := range c.walks {
		if c.walkBytes <= maxWalksBytes {
			break
		}
		if other != k {
			delete(c.walks, other)
			c.walkBytes -= ow.size()
		}
	}
}
