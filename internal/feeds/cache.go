package feeds

import (
	"container/list"
	"sync"
	"time"
)

// cache holds, per agent and feed URL, the last good snapshot and the last
// failure. It is bounded: past max entries the least recently used is
// dropped. Safe for concurrent use.
type cache struct {
	mu  sync.Mutex
	max int
	ll  *list.List // of *cacheEntry, most recently used first
	m   map[string]*list.Element
}

// cacheEntry is copied out of the cache; snapshots are shared, immutable.
type cacheEntry struct {
	key  string
	good *snapshot // nil before the first good fetch
	// failedAt is set when the latest fetch failed, zero after a good one.
	failedAt   time.Time
	failReason string
}

func newCache(max int) *cache {
	return &cache{max: max, ll: list.New(), m: make(map[string]*list.Element)}
}

// cacheKey is per agent and per URL (spec 003: one agent's feed responses
// may be customised for it by X-Claw-ID, so agents never share entries).
func cacheKey(agentID, url string) string { return agentID + "\x00" + url }

func (c *cache) get(key string) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return cacheEntry{}, false
	}
	c.ll.MoveToFront(el)
	return *el.Value.(*cacheEntry), true
}

// putGood records a good fetch, clearing any failure.
func (c *cache) putGood(key string, s *snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(key)
	e.good, e.failedAt, e.failReason = s, time.Time{}, ""
}

// putFailure records a failed fetch and returns the last good snapshot.
func (c *cache) putFailure(key string, at time.Time, reason string) *snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(key)
	e.failedAt, e.failReason = at, reason
	return e.good
}

// entry returns the entry for key, creating it (and evicting) as needed.
// c.mu is held.
func (c *cache) entry(key string) *cacheEntry {
	if el, ok := c.m[key]; ok {
		c.ll.MoveToFront(el)
		return el.Value.(*cacheEntry)
	}
	e := &cacheEntry{key: key}
	c.m[key] = c.ll.PushFront(e)
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*cacheEntry).key)
	}
	return e
}

func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// fresh reports whether the entry's good snapshot may be served at now
// without a fetch.
func (e cacheEntry) fresh(now time.Time) bool {
	return e.good != nil && e.failedAt.IsZero() && now.Sub(e.good.fetchedAt) < e.good.ttl
}

// backingOff reports whether the entry failed recently enough that a new
// fetch should wait: for min(backoff, ttl) after the failure.
func (e cacheEntry) backingOff(now time.Time, backoff, ttl time.Duration) bool {
	return !e.failedAt.IsZero() && now.Sub(e.failedAt) < min(backoff, ttl)
}
