package mediate

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/continuity"
	"github.com/clawdapus/clawgo/internal/jsonl"
)

// ContinuityStore and ContinuityBatch are the store contract
// (internal/continuity) under the names the mediator's options use.
type (
	ContinuityStore = continuity.Store
	ContinuityBatch = continuity.Batch
)

var (
	_ continuity.Store = (*Store)(nil)
	_ continuity.Sizer = (*Store)(nil)
)

// Store holds continuity entries: hidden messages by key. It is bounded by
// count, by total bytes (least recently used go first), by the size of one
// entry and by age. Given a directory it keeps the entries in one
// append-only log (continuity.log, 0600; see storelog.go) and only an index
// in memory (key, offset, size, last use): an entry is read back from the
// log when a request needs it, so neither the store's size nor a restart
// brings the entries into memory. Without a directory the entries are in
// memory, within the same bounds. It is safe for concurrent use; a
// directory is used by one store at a time (continuity.lock).
//
// On disk an entry is whole or absent, never torn: each record carries its
// length and checksum, a Put returns once its record is written (one
// write(2) at the end of the log), a write that fails is cut off again and
// one a crash cut short is cut off by the next OpenStore (and reported to
// StoreOptions.OnRepair: cllama logs a file_repaired audit event); a
// record whose checksum fails is never used. Records are not synced: a
// power loss may lose the latest entries, which only costs the model a
// repeat of the hidden tool calls they recorded. Dead records are
// reclaimed by compaction in the background, so the log stays within
// about 1.5 times MaxBytes.
type Store struct {
	dir           string
	max           int
	maxBytes      int64
	maxEntryBytes int64
	maxAge        time.Duration
	now           func() time.Time
	onRepair      func(jsonl.Cut)

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     *list.List // front = most recently used
	bytes   int64      // sum of the entries' sizes
	// marks remembers the ambiguity marks that size or count pressure
	// evicted (key -> when marked), oldest first in markOrder, so a key
	// two conversations claimed stays unrestorable for as long as a mark
	// would have lived; bounded by maxMarksPerEntry times the entry bound.
	// With a directory their records stay in the log (markBytes), so they
	// survive a restart.
	marks     map[string]*list.Element
	markOrder *list.List
	markBytes int64

	// The log, with a directory (storelog.go).
	file   *logFile
	size   int64 // end of the log: where the next record goes
	torn   bool  // a failed write could not be cut off: cut before the next
	closed bool
	unlock func()
	// Compaction: one at a time, in the background.
	compacting     bool
	compactEnd     int64   // the log's end when the running one started
	compactDropped []int64 // records before compactEnd cleared since
	compactAfter   time.Time
	compactions    sync.WaitGroup
}

// markEntry is a remembered ambiguity mark.
type markEntry struct {
	key  string
	used time.Time
	size int64 // of its record in the log
}

// maxMarksPerEntry bounds the remembered marks as a multiple of the entry
// bound (a mark costs its key: tens of bytes).
const maxMarksPerEntry = 4

type storeEntry struct {
	key  string
	off  int64 // of its record in the log
	size int64 // of its record, or of its messages in memory
	used time.Time
	// messages are held only by a store without a directory.
	messages []json.RawMessage
	// ambiguous marks a key two writers claimed with PutOnce: it holds no
	// messages and Get never returns it.
	ambiguous bool
}

// StoreOptions configure a Store. Zero values mean the defaults.
type StoreOptions struct {
	// Dir persists entries; "" keeps them in memory only.
	Dir string
	// MaxEntries bounds the entry count (default 4096).
	MaxEntries int
	// MaxBytes bounds the entries' total size: their records in the log,
	// or the bytes of their messages in memory (default 64 MiB).
	MaxBytes int64
	// MaxEntryBytes bounds one entry; a larger one is refused with
	// ErrEntryTooLarge (default 4 MiB, at most MaxBytes).
	MaxEntryBytes int64
	// MaxAge drops entries not used for this long (default 7 days).
	MaxAge time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnRepair is told when OpenStore cut a record a crash cut short off
	// the end of the log.
	OnRepair func(jsonl.Cut)
}

// Defaults of StoreOptions (continuity's).
const (
	DefaultContinuityMaxEntries    = continuity.DefaultMaxEntries
	DefaultContinuityMaxBytes      = continuity.DefaultMaxBytes
	DefaultContinuityMaxEntryBytes = continuity.DefaultMaxEntryBytes
)

// The store's errors (continuity's).
var (
	ErrEntryTooLarge = continuity.ErrEntryTooLarge
	ErrAmbiguous     = continuity.ErrAmbiguous
)

// tempPrefix names a log being compacted; one left behind is from a
// compaction a crash or a full disk interrupted.
const tempPrefix = ".tmp-"

// OpenStore opens a store, indexing the entries a directory already holds.
// With a directory, Close releases it.
func OpenStore(o StoreOptions) (*Store, error) {
	s := &Store{dir: o.Dir, max: o.MaxEntries, maxBytes: o.MaxBytes, maxEntryBytes: o.MaxEntryBytes, maxAge: o.MaxAge, now: o.Now, onRepair: o.OnRepair,
		entries: map[string]*list.Element{}, lru: list.New(), marks: map[string]*list.Element{}, markOrder: list.New()}
	if s.max <= 0 {
		s.max = DefaultContinuityMaxEntries
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultContinuityMaxBytes
	}
	if s.maxEntryBytes <= 0 {
		s.maxEntryBytes = DefaultContinuityMaxEntryBytes
	}
	s.maxEntryBytes = min(s.maxEntryBytes, s.maxBytes, maxRecordLen)
	if s.maxAge <= 0 {
		s.maxAge = 7 * 24 * time.Hour
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("continuity store: %w", err)
	}
	if err := s.openLog(); err != nil {
		return nil, fmt.Errorf("continuity store %s: %w", s.dir, err)
	}
	return s, nil
}

// Get returns the hidden messages stored under key.
func (s *Store) Get(_ context.Context, key string) ([]json.RawMessage, bool) {
	s.mu.Lock()
	el, ok := s.entries[key]
	if !ok || s.closed {
		s.mu.Unlock()
		return nil, false
	}
	e := el.Value.(*storeEntry)
	now := s.now()
	if now.Sub(e.used) > s.maxAge {
		s.removeLocked(el)
		s.mu.Unlock()
		return nil, false
	}
	e.used = now
	s.lru.MoveToFront(el)
	if e.ambiguous {
		s.mu.Unlock()
		return nil, false
	}
	if s.dir == "" {
		s.mu.Unlock()
		return e.messages, true
	}
	f, off, size := s.file.acquire(), e.off, e.size
	s.mu.Unlock()
	// Read outside the lock: records are never rewritten in place (a
	// compaction writes a new file, and this one stays open until its
	// last reader is done).
	b := make([]byte, size)
	_, err := f.f.ReadAt(b, off)
	f.release()
	var rec record
	if err == nil {
		rec, err = decodeRecord(b)
	}
	if err != nil || rec.kind != kindEntry || rec.key != key {
		s.mu.Lock()
		if cur, ok := s.entries[key]; ok && cur == el && e.off == off {
			s.removeLocked(el) // a damaged record is not continuity
		}
		s.mu.Unlock()
		return nil, false
	}
	return rec.messages, true
}

// Put stores messages under key, persisting them when the store has a
// directory (it returns once their record is written). An entry over
// MaxEntryBytes is refused with ErrEntryTooLarge and an older entry under
// key is dropped. A remembered ambiguity mark of key is dropped too: Put
// replaces whatever key named.
func (s *Store) Put(_ context.Context, key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	return s.put(key, messages, false)
}

// PutOnce is Put for a key that must name one entry for good: when key
// already has an entry (or is ambiguous already), neither the old nor the
// new messages are kept; the key is marked ambiguous, so Get finds nothing
// under it from then on, and ErrAmbiguous is returned. An entry evicted
// since is forgotten, so a key is guarded only while the store knows it.
func (s *Store) PutOnce(_ context.Context, key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	return s.put(key, messages, true)
}

func (s *Store) put(key string, messages []json.RawMessage, once bool) error {
	if len(key) == 0 || len(key) > maxKeyLen {
		return fmt.Errorf("continuity key of %d bytes: want 1 to %d", len(key), maxKeyLen)
	}
	now := s.now()
	var (
		rec  []byte
		size int64
	)
	if s.dir != "" {
		bp := recPool.Get().(*[]byte)
		defer func() {
			if rec != nil && cap(rec) <= maxPooledBuf {
				*bp = rec[:0]
				recPool.Put(bp)
			}
		}()
		if size = recordLen(key, messages); size <= s.maxEntryBytes {
			rec = appendRecord((*bp)[:0], kindEntry, now.UnixNano(), key, messages)
		}
	} else {
		for _, m := range messages {
			size += int64(len(m))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStoreClosed
	}
	el, exists := s.liveLocked(key)
	if size > s.maxEntryBytes {
		if exists {
			if once {
				return errors.Join(s.markAmbiguousLocked(el), ErrAmbiguous)
			}
			// The old entry is stale now: it must not come back at the
			// next start either.
			err := s.invalidateLocked(el.Value.(*storeEntry))
			s.removeLocked(el)
			if err != nil {
				return err
			}
		}
		return fmt.Errorf("%w: %d bytes, over the cap of %d bytes per entry", ErrEntryTooLarge, size, s.maxEntryBytes)
	}
	if once && !exists && s.markedLocked(key) {
		// An evicted mark still guards its key: the claim is ambiguous
		// again, and the mark is an entry again.
		el = s.lru.PushFront(&storeEntry{key: key, used: now})
		s.entries[key] = el
		exists = true
	}
	if once && exists {
		return errors.Join(s.markAmbiguousLocked(el), ErrAmbiguous)
	}
	if !once {
		s.forgetRetiredMarkLocked(key)
	}
	var off int64
	if s.dir != "" {
		// Written under the lock, so the log and the index agree on
		// which record of key is the latest.
		var err error
		if off, err = s.appendLocked(rec); err != nil {
			return err
		}
		messages = nil
	}
	if exists {
		e := el.Value.(*storeEntry)
		s.bytes += size - e.size
		e.messages, e.off, e.size, e.used, e.ambiguous = messages, off, size, now, false
		s.lru.MoveToFront(el)
	} else {
		s.entries[key] = s.lru.PushFront(&storeEntry{key: key, messages: messages, off: off, size: size, used: now})
		s.bytes += size
	}
	s.evictLocked()
	s.maybeCompactLocked()
	return nil
}

// liveLocked is key's entry unless it has expired (then it is removed).
func (s *Store) liveLocked(key string) (*list.Element, bool) {
	el, ok := s.entries[key]
	if ok && s.now().Sub(el.Value.(*storeEntry).used) > s.maxAge {
		s.removeLocked(el)
		return nil, false
	}
	return el, ok
}

// markAmbiguousLocked replaces an entry by an ambiguity mark (a record of
// its own in the log, written under the lock).
func (s *Store) markAmbiguousLocked(el *list.Element) error {
	e := el.Value.(*storeEntry)
	e.messages, e.ambiguous, e.used = nil, true, s.now()
	s.lru.MoveToFront(el)
	var size int64
	if s.dir != "" {
		rec := appendRecord(nil, kindMark, e.used.UnixNano(), e.key, nil)
		off, err := s.appendLocked(rec)
		if err != nil {
			// Without its mark the key must not restore the old entry
			// after a restart either.
			err = errors.Join(err, s.invalidateLocked(e))
			s.removeLocked(el)
			return err
		}
		e.off, size = off, int64(len(rec))
	}
	s.bytes += size - e.size
	e.size = size
	s.maybeCompactLocked()
	return nil
}

// Len is the number of entries.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// Bytes is the entries' total size.
func (s *Store) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

func (s *Store) evictLocked() {
	for s.lru.Len() > s.max || s.bytes > s.maxBytes {
		el := s.lru.Back()
		if el.Value.(*storeEntry).ambiguous {
			s.retireMarkLocked(el)
			continue
		}
		s.removeLocked(el)
	}
	now := s.now()
	for el := s.lru.Back(); el != nil; el = s.lru.Back() {
		if now.Sub(el.Value.(*storeEntry).used) <= s.maxAge {
			break
		}
		s.removeLocked(el)
	}
}

// retireMarkLocked evicts a mark's entry and remembers the mark (its
// record stays in the log).
func (s *Store) retireMarkLocked(el *list.Element) {
	e := el.Value.(*storeEntry)
	s.lru.Remove(el)
	delete(s.entries, e.key)
	s.bytes -= e.size
	s.rememberMarkLocked(e.key, e.used, e.size)
}

// rememberMarkLocked keeps an evicted mark's key; the oldest marks beyond
// the bound are forgotten.
func (s *Store) rememberMarkLocked(key string, used time.Time, size int64) {
	s.forgetRetiredMarkLocked(key)
	s.marks[key] = s.markOrder.PushBack(&markEntry{key: key, used: used, size: size})
	s.markBytes += size
	for s.markOrder.Len() > s.max*maxMarksPerEntry {
		s.forgetRetiredMarkLocked(s.markOrder.Front().Value.(*markEntry).key)
	}
}

// forgetRetiredMarkLocked drops key's remembered mark, if any.
func (s *Store) forgetRetiredMarkLocked(key string) {
	if el, ok := s.marks[key]; ok {
		s.markOrder.Remove(el)
		delete(s.marks, key)
		s.markBytes -= el.Value.(*markEntry).size
	}
}

// markedLocked reports whether key has a remembered mark not yet aged
// out. Either way the mark is dropped: a live one becomes an entry again.
func (s *Store) markedLocked(key string) bool {
	el, ok := s.marks[key]
	if !ok {
		return false
	}
	s.forgetRetiredMarkLocked(key)
	return s.now().Sub(el.Value.(*markEntry).used) <= s.maxAge
}

func (s *Store) removeLocked(el *list.Element) {
	e := el.Value.(*storeEntry)
	s.lru.Remove(el)
	delete(s.entries, e.key)
	s.bytes -= e.size
}
