package mediate

import (
	"crypto/sha256"
	"sync"
)

type memoKey struct {
	format string
	raw    [sha256.Size]byte
}

// canonCache remembers canonical digests of messages. It is bounded by
// two generations: when the current one is full it becomes the old one
// and the previous old one is dropped, so memory stays within 2*max
// entries (about 100 bytes each) without per-entry bookkeeping. It is
// safe for concurrent use.
type canonCache struct {
	mu       sync.Mutex
	max      int
	cur, old map[memoKey]canonMemo
}

func newCanonCache(max int) *canonCache {
	return &canonCache{max: max, cur: make(map[memoKey]canonMemo)}
}

func (c *canonCache) get(k memoKey) (canonMemo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.cur[k]; ok {
		return v, true
	}
	v, ok := c.old[k]
	if ok {
		c.putLocked(k, v)
	}
	return v, ok
}

func (c *canonCache) put(k memoKey, v canonMemo) {
	c.mu.Lock()
	c.putLocked(k, v)
	c.mu.Unlock()
}

func (c *canonCache) putLocked(k memoKey, v canonMemo) {
	if len(c.cur) >= c.max {
		c.old, c.cur = c.cur, make(map[memoKey]canonMemo, c.max)
	}
	c.cur[k] = v
}
