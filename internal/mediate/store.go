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

// Store holds continuity entries: hidden messages by key. It is bounded by
// count (least recently used go first) and by age, and, when given a
// directory, writes each entry to its own file (0600) so continuity
// survives a proxy restart. It is safe for concurrent use.
//
// On disk an entry is whole or absent, never torn: it is written to a
// temporary file that is renamed over the entry's file only once complete.
// A crash (or a full disk) mid-write leaves the previous version and at
// most a temporary file, which the next OpenStore removes; a file that
// does not decode (a power loss before the data reached the disk) is
// removed on load rather than used. Entries are not synced: a power loss
// may lose the latest ones, which only costs the model a repeat of the
// hidden tool calls they recorded.
type Store struct {
	dir    string
	max    int
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     *list.List // front = most recently used
}

type storeEntry struct {
	key      string
	messages []json.RawMessage
	used     time.Time
}

// storeFile is an entry on disk.
type storeFile struct {
	Stored   time.Time         `json:"stored"`
	Messages []json.RawMessage `json:"messages"`
}

// StoreOptions configure a Store. Zero values mean the defaults.
type StoreOptions struct {
	// Dir persists entries; "" keeps them in memory only.
	Dir string
	// MaxEntries bounds the entry count (default 4096).
	MaxEntries int
	// MaxAge drops entries not used for this long (default 7 days).
	MaxAge time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

const (
	entrySuffix = ".json"
	// tempPrefix names an entry being written; one left behind is from a
	// write a crash or a full disk interrupted.
	tempPrefix = ".tmp-"
)

// OpenStore opens (and loads) a store.
func OpenStore(o StoreOptions) (*Store, error) {
	s := &Store{dir: o.Dir, max: o.MaxEntries, maxAge: o.MaxAge, now: o.Now, entries: map[string]*list.Element{}, lru: list.New()}
	if s.max <= 0 {
		s.max = 4096
	}
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

// load reads every entry file, newest last, dropping expired and excess
// ones, and removes temporary files left by interrupted writes (the store
// is opened once, before any Put of this process).
func (s *Store) load() error {
	des, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("continuity store: %w", err)
	}
	var loaded []*storeEntry
	for _, de := range des {
		name := de.Name()
		if !de.IsDir() && strings.HasPrefix(name, tempPrefix) {
			_ = os.Remove(filepath.Join(s.dir, name))
			continue
		}
		if de.IsDir() || !strings.HasSuffix(name, entrySuffix) {
			continue
		}
		path := filepath.Join(s.dir, name)
		info, err := de.Info()
		if err != nil {
			continue
		}
		b, err := os.ReadFile(path)
		var f storeFile
		if err != nil || json.Unmarshal(b, &f) != nil || len(f.Messages) == 0 {
			_ = os.Remove(path) // a torn or foreign file is not continuity
			continue
		}
		used := info.ModTime()
		if s.now().Sub(used) > s.maxAge {
			_ = os.Remove(path)
			continue
		}
		loaded = append(loaded, &storeEntry{key: strings.TrimSuffix(name, entrySuffix), messages: f.Messages, used: used})
	}
	sort.Slice(loaded, func(i, j int) bool { return loaded[i].used.Before(loaded[j].used) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range loaded {
		s.entries[e.key] = s.lru.PushFront(e)
	}
	s.evictLocked()
	return nil
}

// Get returns the hidden messages stored under key.
func (s *Store) Get(key string) ([]json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*storeEntry)
	now := s.now()
	if now.Sub(e.used) > s.maxAge {
		s.removeLocked(el)
		return nil, false
	}
	e.used = now
	s.lru.MoveToFront(el)
	return e.messages, true
}

// Put stores messages under key, persisting them when the store has a
// directory. The write is atomic (temp file and rename).
func (s *Store) Put(key string, messages []json.RawMessage) error {
	if len(messages) == 0 {
		return nil
	}
	now := s.now()
	var werr error
	if s.dir != "" {
		werr = s.write(key, storeFile{Stored: now, Messages: messages})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.entries[key]; ok {
		e := el.Value.(*storeEntry)
		e.messages, e.used = messages, now
		s.lru.MoveToFront(el)
	} else {
		s.entries[key] = s.lru.PushFront(&storeEntry{key: key, messages: messages, used: now})
	}
	s.evictLocked()
	return werr
}

func (s *Store) write(key string, f storeFile) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	// CreateTemp makes the file 0600 already; keep it explicit.
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(s.dir, key+entrySuffix))
}

// Len is the number of entries.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

func (s *Store) evictLocked() {
	for s.lru.Len() > s.max {
		s.removeLocked(s.lru.Back())
	}
	now := s.now()
	for el := s.lru.Back(); el != nil; el = s.lru.Back() {
		if now.Sub(el.Value.(*storeEntry).used) <= s.maxAge {
			break
		}
		s.removeLocked(el)
	}
}

func (s *Store) removeLocked(el *list.Element) {
	e := el.Value.(*storeEntry)
	s.lru.Remove(el)
	delete(s.entries, e.key)
	if s.dir != "" {
		_ = os.Remove(filepath.Join(s.dir, e.key+entrySuffix))
	}
}
