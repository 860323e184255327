package mediate

import (
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// ContinuityStore keeps the hidden rounds of conversations between turns
// (see Store for the rules every implementation keeps: bounded entries,
// PutOnce's ambiguity, nothing returned that was not whole). A store
// shared by several cllama replicas lets a conversation's turns land on
// any of them.
type ContinuityStore interface {
	// Get returns the messages under key (false: none, or ambiguous).
	Get(key string) ([]json.RawMessage, bool)
	// Put stores messages under key; it returns once they are stored.
	Put(key string, messages []json.RawMessage) error
	// PutOnce stores messages under a key that must name one entry for
	// good: a second claim marks the key ambiguous (ErrAmbiguous).
	PutOnce(key string, messages []json.RawMessage) error
	// Len and Bytes describe the store's size, for metrics (Bytes may be
	// 0 when the store does not track it).
	Len() int
	Bytes() int64
}

var _ ContinuityStore = (*Store)(nil)

// ContinuityBatch is a ContinuityStore that reads many keys in one go. A
// request looks up every assistant message of its conversation; a store
// across the network (one shared by replicas) answers them in one round
// trip rather than one per message. Keys it does not find (or finds
// ambiguous) are nil in the answer, and what it returns is what Get would
// have, key by key.
type ContinuityBatch interface {
	ContinuityStore
	GetMany(keys []string) [][]json.RawMessage
}

// Store holds continuity entries: hidden messages by key. It is bounded by
// count, by total bytes (least recently used go first), by the size of one
// entry and by age. Given a directory it keeps each entry in a file of its
// own (0600) and only an index in memory (key, size, last use): entries are
// read back from disk when a request needs them, so neither the store's
// size nor a restart brings them all into memory. Without a directory the
// entries are in memory, within the same bounds. It is safe for concurrent
// use.
//
// On disk an entry is whole or absent, never torn: it is written to a
// temporary file that is renamed over the entry's file only once complete.
// A crash (or a full disk) mid-write leaves the previous version and at
// most a temporary file, which the next OpenStore removes; a file that
// does not decode (a power loss before the data reached the disk) is
// removed when it is read rather than used. Entries are not synced: a
// power loss may lose the latest ones, which only costs the model a repeat
// of the hidden tool calls they recorded.
type Store struct {
	dir           string
	max           int
	maxBytes      int64
	maxEntryBytes int64
	maxAge        time.Duration
	now           func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     *list.List // front = most recently used
	bytes   int64      // sum of the entries' sizes
	// marks remembers the ambiguity marks that size or count pressure
	// evicted (key -> when marked), oldest first in markOrder, so a key
	// two conversations claimed stays unrestorable for as long as a mark
	// would have lived; bounded by maxMarksPerEntry times the entry bound.
	// With a directory each is also a small <key>.mark file, so they
	// survive a restart.
	marks     map[string]*list.Element
	markOrder *list.List
}

// markEntry is a remembered ambiguity mark.
type markEntry struct {
	key  string
	used time.Time
}

// maxMarksPerEntry bounds the remembered marks as a multiple of the entry
// bound (a mark costs its key: tens of bytes).
const maxMarksPerEntry = 4

type storeEntry struct {
	key  string
	size int64
	used time.Time
	// messages are held only by a store without a directory.
	messages []json.RawMessage
	// ambiguous marks a key two writers claimed with PutOnce: it holds no
	// messages and Get never returns it. On disk it is known once its
	// file has been read.
	ambiguous bool
}

// storeFile is an entry on disk.
type storeFile struct {
	Stored    time.Time         `json:"stored"`
	Messages  []json.RawMessage `json:"messages,omitempty"`
	Ambiguous bool              `json:"ambiguous,omitempty"`
}

// StoreOptions configure a Store. Zero values mean the defaults.
type StoreOptions struct {
	// Dir persists entries; "" keeps them in memory only.
	Dir string
	// MaxEntries bounds the entry count (default 4096).
	MaxEntries int
	// MaxBytes bounds the entries' total size: their files' sizes, or the
	// bytes of their messages in memory (default 64 MiB).
	MaxBytes int64
	// MaxEntryBytes bounds one entry; a larger one is refused with
	// ErrEntryTooLarge (default 4 MiB, at most MaxBytes).
	MaxEntryBytes int64
	// MaxAge drops entries not used for this long (default 7 days).
	MaxAge time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Defaults of StoreOptions.
const (
	DefaultContinuityMaxEntries    = 4096
	DefaultContinuityMaxBytes      = 64 << 20
	DefaultContinuityMaxEntryBytes = 4 << 20
)

// ErrEntryTooLarge is returned by Put for an entry over MaxEntryBytes; the
// entry is not kept.
var ErrEntryTooLarge = errors.New("continuity entry too large")

// ErrAmbiguous is returned by PutOnce for a key that already had an entry:
// the key is kept as ambiguous and restores nothing from then on.
var ErrAmbiguous = errors.New("continuity key claimed twice")

const (
	entrySuffix = ".json"
	markSuffix  = ".mark"
	// tempPrefix names an entry being written; one left behind is from a
	// write a crash or a full disk interrupted.
	tempPrefix = ".tmp-"
)

// OpenStore opens a store, indexing the entries a directory already holds.
func OpenStore(o StoreOptions) (*Store, error) {
	s := &Store{dir: o.Dir, max: o.MaxEntries, maxBytes: o.MaxBytes, maxEntryBytes: o.MaxEntryBytes, maxAge: o.MaxAge, now: o.Now,
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
	s.maxEntryBytes = min(s.maxEntryBytes, s.maxBytes)
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
	return s, s.load()
}

// load indexes every entry file by size and modification time, oldest
// first, dropping expired, oversized and excess ones, and removes
// temporary files left by interrupted writes (the store is opened once,
// before any Put of this process). It reads no entry: a file is decoded
// when a request needs it.
func (s *Store) load() error {
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("continuity store: %w", err)
	}
	var loaded []*storeEntry
	var marks []markEntry
	for _, de := range des {
		name := de.Name()
		if !de.IsDir() && strings.HasPrefix(name, tempPrefix) {
			_ = os.Remove(filepath.Join(s.dir, name))
			continue
		}
		if !de.Type().IsRegular() {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		if key, ok := strings.CutSuffix(name, markSuffix); ok {
			if s.now().Sub(info.ModTime()) > s.maxAge {
				_ = os.Remove(filepath.Join(s.dir, name))
				continue
			}
			marks = append(marks, markEntry{key: key, used: info.ModTime()})
			continue
		}
		if !strings.HasSuffix(name, entrySuffix) {
			continue
		}
		if s.now().Sub(info.ModTime()) > s.maxAge || info.Size() > s.maxEntryBytes {
			_ = os.Remove(filepath.Join(s.dir, name))
			continue
		}
		loaded = append(loaded, &storeEntry{key: strings.TrimSuffix(name, entrySuffix), size: info.Size(), used: info.ModTime()})
	}
	sort.Slice(loaded, func(i, j int) bool { return loaded[i].used.Before(loaded[j].used) })
	sort.Slice(marks, func(i, j int) bool { return marks[i].used.Before(marks[j].used) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range marks {
		s.rememberMarkLocked(m.key, m.used)
	}
	for _, e := range loaded {
		s.entries[e.key] = s.lru.PushFront(e)
		s.bytes += e.size
	}
	s.evictLocked()
	return nil
}

// Get returns the hidden messages stored under key.
func (s *Store) Get(key string) ([]json.RawMessage, bool) {
	s.mu.Lock()
	el, ok := s.entries[key]
	if !ok {
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
	s.mu.Unlock()
	// Read outside the lock: a concurrent Put renames a whole new version
	// over the file and eviction unlinks it, so this reads one whole
	// version or finds none.
	b, err := os.ReadFile(s.path(key))
	var f storeFile
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err == nil && f.Ambiguous {
		s.mu.Lock()
		e.ambiguous = true
		s.mu.Unlock()
		return nil, false
	}
	if err != nil || len(f.Messages) == 0 {
		s.mu.Lock()
		if cur, ok := s.entries[key]; ok && cur == el {
			s.removeLocked(el) // a torn or foreign file is not continuity
		}
		s.mu.Unlock()
		return nil, false
	}
	return f.Messages, true
}

// Put stores messages under key, persisting them when the store has a
// directory. The write is atomic (temp file and rename). An entry over
// MaxEntryBytes is refused with ErrEntryTooLarge and an older entry under
// key is dropped.
func (s *Store) Put(key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	return s.put(key, storeFile{Stored: s.now(), Messages: messages}, false)
}

// PutOnce is Put for a key that must name one entry for good: when key
// already has an entry (or is ambiguous already), neither the old nor the
// new messages are kept; the key is marked ambiguous, so Get finds nothing
// under it from then on, and ErrAmbiguous is returned. An entry evicted
// since is forgotten, so a key is guarded only while the store knows it.
func (s *Store) PutOnce(key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	return s.put(key, storeFile{Stored: s.now(), Messages: messages}, true)
}

func (s *Store) put(key string, f storeFile, once bool) error {
	var (
		encoded []byte
		size    int64
	)
	if s.dir != "" {
		var err error
		if encoded, err = json.Marshal(f); err != nil {
			return err
		}
		size = int64(len(encoded))
	} else {
		for _, m := range f.Messages {
			size += int64(len(m))
		}
	}
	if size > s.maxEntryBytes {
		s.mu.Lock()
		defer s.mu.Unlock()
		if el, ok := s.liveLocked(key); ok {
			if once {
				return errors.Join(s.markAmbiguousLocked(el), ErrAmbiguous)
			}
			s.removeLocked(el)
		}
		return fmt.Errorf("%w: %d bytes, over the cap of %d bytes per entry", ErrEntryTooLarge, size, s.maxEntryBytes)
	}
	var tmp string
	if s.dir != "" {
		var err error
		if tmp, err = s.writeTemp(encoded); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	el, exists := s.liveLocked(key)
	if once && !exists && s.markedLocked(key) {
		// An evicted mark still guards its key: the claim is ambiguous
		// again, and the mark is an entry again.
		el = s.lru.PushFront(&storeEntry{key: key, used: f.Stored})
		s.entries[key] = el
		exists = true
	}
	if once && exists {
		if tmp != "" {
			_ = os.Remove(tmp)
		}
		return errors.Join(s.markAmbiguousLocked(el), ErrAmbiguous)
	}
	messages := f.Messages
	if tmp != "" {
		// Renamed under the lock, so the file and the index agree: an
		// eviction cannot unlink the new version of an entry it is
		// dropping the old one of.
		if err := os.Rename(tmp, s.path(key)); err != nil {
			_ = os.Remove(tmp)
			return err
		}
		messages = nil
	}
	if exists {
		e := el.Value.(*storeEntry)
		s.bytes += size - e.size
		e.messages, e.size, e.used, e.ambiguous = messages, size, f.Stored, false
		s.lru.MoveToFront(el)
	} else {
		s.entries[key] = s.lru.PushFront(&storeEntry{key: key, messages: messages, size: size, used: f.Stored})
		s.bytes += size
	}
	s.evictLocked()
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

// markAmbiguousLocked replaces an entry by an ambiguity marker (a small
// file, written under the lock).
func (s *Store) markAmbiguousLocked(el *list.Element) error {
	e := el.Value.(*storeEntry)
	e.messages, e.ambiguous, e.used = nil, true, s.now()
	s.lru.MoveToFront(el)
	var size int64
	if s.dir != "" {
		b, err := json.Marshal(storeFile{Stored: e.used, Ambiguous: true})
		if err != nil {
			return err
		}
		tmp, err := s.writeTemp(b)
		if err == nil {
			if err = os.Rename(tmp, s.path(e.key)); err != nil {
				_ = os.Remove(tmp)
			}
		}
		if err != nil {
			// Without its marker the key must not restore the old entry
			// after a restart either.
			s.removeLocked(el)
			return err
		}
		size = int64(len(b))
	}
	s.bytes += size - e.size
	e.size = size
	return nil
}

func (s *Store) path(key string) string { return filepath.Join(s.dir, key+entrySuffix) }

// writeTemp writes b to a new temporary file of the store and returns its
// name; on error nothing is left behind.
func (s *Store) writeTemp(b []byte) (string, error) {
	tmp, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	// CreateTemp makes the file 0600 already; keep it explicit.
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
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
		if e := el.Value.(*storeEntry); s.isMarkLocked(e) {
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

// isMarkLocked reports whether e is an ambiguity mark. An entry indexed
// at start-up and never read may be one: a file small enough to be a mark
// is read to know (a mark's file is tens of bytes).
func (s *Store) isMarkLocked(e *storeEntry) bool {
	if e.ambiguous || s.dir == "" || e.messages != nil || e.size > maxMarkFileBytes {
		return e.ambiguous
	}
	b, err := os.ReadFile(s.path(e.key))
	var f storeFile
	return err == nil && json.Unmarshal(b, &f) == nil && f.Ambiguous
}

// maxMarkFileBytes is more than a mark's file ever takes.
const maxMarkFileBytes = 256

// retireMarkLocked evicts a mark's entry and remembers the mark: with a
// directory, its file becomes <key>.mark.
func (s *Store) retireMarkLocked(el *list.Element) {
	e := el.Value.(*storeEntry)
	s.lru.Remove(el)
	delete(s.entries, e.key)
	s.bytes -= e.size
	if s.dir != "" {
		if err := os.Rename(s.path(e.key), s.markPath(e.key)); err != nil {
			_ = os.Remove(s.path(e.key))
		}
	}
	s.rememberMarkLocked(e.key, e.used)
}

func (s *Store) markPath(key string) string { return filepath.Join(s.dir, key+markSuffix) }

// rememberMarkLocked keeps an evicted mark's key; the oldest marks beyond
// the bound are forgotten (and their files removed).
func (s *Store) rememberMarkLocked(key string, used time.Time) {
	if el, ok := s.marks[key]; ok {
		s.markOrder.Remove(el)
	}
	s.marks[key] = s.markOrder.PushBack(&markEntry{key: key, used: used})
	for s.markOrder.Len() > s.max*maxMarksPerEntry {
		oldest := s.markOrder.Front()
		s.markOrder.Remove(oldest)
		s.forgetMarkLocked(oldest.Value.(*markEntry).key)
	}
}

func (s *Store) forgetMarkLocked(key string) {
	delete(s.marks, key)
	if s.dir != "" {
		_ = os.Remove(s.markPath(key))
	}
}

// markedLocked reports whether key has a remembered mark not yet aged
// out. Either way the mark is dropped: a live one becomes an entry again.
func (s *Store) markedLocked(key string) bool {
	el, ok := s.marks[key]
	if !ok {
		return false
	}
	s.markOrder.Remove(el)
	s.forgetMarkLocked(key)
	return s.now().Sub(el.Value.(*markEntry).used) <= s.maxAge
}

func (s *Store) removeLocked(el *list.Element) {
	e := el.Value.(*storeEntry)
	s.lru.Remove(el)
	delete(s.entries, e.key)
	s.bytes -= e.size
	if s.dir != "" {
		_ = os.Remove(s.path(e.key))
	}
}
