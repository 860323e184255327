package mediate

import (
	"crypto/sha256"
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
