// Package snapcache keeps what is derived from an immutable snapshot (a
// parsed manifest) for as long as the snapshot lives: keyed weakly by its
// address, an entry goes when the snapshot is collected (a reloaded agent's
// old manifest and everything built from it go together).
package snapcache

import (
	"runtime"
	"sync"
	"weak"
)

// Cache maps snapshots of type K to values of type V. It is safe for
// concurrent use; the zero value is ready.
type Cache[K, V any] struct {
	mu sync.Mutex
	m  map[weak.Pointer[K]]V
}

// Get returns the value of k, building it on first use. Two callers
// racing on a new k may both build; one value is kept and both get it.
func (c *Cache[K, V]) Get(k *K, build func() (V, error)) (V, error) {
	key := weak.Make(k)
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[key]; ok {
		return prev, nil
	}
	if c.m == nil {
		c.m = map[weak.Pointer[K]]V{}
	}
	c.m[key] = v
	runtime.AddCleanup(k, func(key weak.Pointer[K]) {
		c.mu.Lock()
		delete(c.m, key)
		c.mu.Unlock()
	}, key)
	return v, nil
}

// Len is the number of snapshots with a value (tests).
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
