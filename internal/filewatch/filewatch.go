// Package filewatch keeps a value read from files current without a
// watcher: at most once per check interval it stats the files, and only
// when a size or modification time changed does it have the value read
// again. It owns the when (the interval, the comparison, one re-read at a
// time) and not the what: callers say which files to stamp and how to read
// them, and decide what a failed read means.
package filewatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stamp summarises the size and modification time of each file, by base
// name; a file that cannot be stat'ed counts as absent. Two stamps are
// equal when no file changed in a way a stat can see.
func Stamp(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&b, "%s:-;", filepath.Base(p))
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", filepath.Base(p), fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

// Value holds a *T read from files and the stamp of the files it was read
// from. Load and Get are safe for concurrent use and take no lock unless a
// check is due; Get re-reads at most once at a time. The zero Value holds
// nil and is due for a check.
type Value[T any] struct {
	cur     atomic.Pointer[T]
	checked atomic.Int64 // unix nanos of the last check
	mu      sync.Mutex   // serialises checks; guards stamp
	stamp   string
}

// Set stores val, read from files whose stamp was stamp, as checked at now.
func (v *Value[T]) Set(val *T, stamp string, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cur.Store(val)
	v.stamp = stamp
	v.checked.Store(now.UnixNano())
}

// Load returns the current value without checking the files.
func (v *Value[T]) Load() *T { return v.cur.Load() }

// Get returns the current value, checking the files first when at least
// interval has passed since the last check (a negative interval checks on
// every call). A check calls stamp; when it fails or differs from the
// stamp of the current value, reload reads the files again and returns the
// new value, or nil to keep the current one, and the stamp of the files it
// read (taken before reading, so a change racing with the read is seen by
// the next check).
func (v *Value[T]) Get(now time.Time, interval time.Duration, stamp func() (string, error), reload func() (*T, string)) *T {
	if now.UnixNano()-v.checked.Load() < int64(interval) {
		return v.cur.Load()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if now.UnixNano()-v.checked.Load() < int64(interval) {
		return v.cur.Load() // checked while we waited
	}
	v.checked.Store(now.UnixNano())
	if s, err := stamp(); err == nil && s == v.stamp {
		return v.cur.Load()
	}
	val, s := reload()
	v.stamp = s
	if val != nil {
		v.cur.Store(val)
	}
	return v.cur.Load()
}
