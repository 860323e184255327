// Package owners remembers who created each object a provider stores for
// cllama's runners (the Responses API's responses): the agent that asked
// for it and the provider that keeps it. The proxy relays reads, deletions
// and continuations of a stored object only for its owner, at its
// provider; an id the store does not know is nobody's.
//
// The store is bounded by a count of ids: past it, the oldest recorded are
// forgotten first (their owners lose access through cllama; the provider
// still holds them). Given a directory it keeps a log there, one JSON line
// per id recorded or forgotten, replayed on Open, so ownership survives a
// restart; without one it lives in memory. It is safe for concurrent use: a
// lookup is a map read under a read lock, and recording writes one short
// line to a file already open.
//
// What a recorded id (Record returned nil) survives:
//
//   - A process crash (kill -9, OOM kill, panic): its line was written
//     (write(2) completed) before Record returned, so the kernel has it. A
//     write cut short by the crash leaves at most a partial last line,
//     never acknowledged, which the next Open cuts off before it replays
//     the log (jsonl.CutTornTail) and reports (Options.OnRepair; cllama
//     logs a file_repaired audit event).
//   - A power loss or kernel crash: the log is fsync'ed in the background
//     once per SyncEvery (default one second) when it changed, and on
//     Close, so at most the last interval's ids may be lost.
//
// Losing an id only ever denies: its owner's reads and continuations are
// refused as for an unknown id; no other agent gains it. A forgotten id
// whose line was lost is remembered again, which lets its owner reach the
// provider for an object it already deleted (the provider answers 404).
//
// The log grows by a line per id; once it holds twice the bound (at least
// compactMinLines lines) it is rewritten in the background from memory,
// oldest first, to a temporary file that is fsync'ed and renamed over it:
// the log on disk is always one whole version or the other, never torn.
package owners

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/jsonl"
)

// FileName is the log's name in the store's directory.
const FileName = "stored-responses.jsonl"

// Defaults and limits.
const (
	// DefaultMax is the default bound on the ids remembered.
	DefaultMax = 100_000
	// DefaultSyncEvery is how often a changed log is fsync'ed.
	DefaultSyncEvery = time.Second
	// MaxIDBytes is the longest id recorded (providers' ids are tens of
	// bytes); a longer one is refused with ErrInvalidID.
	MaxIDBytes = 512
	// compactMinLines is the fewest lines the log holds before it is
	// rewritten, so a small bound does not rewrite it every few ids.
	compactMinLines = 1024
	// maxLineBytes bounds a line read back: an id, an agent id, a
	// provider name and a conversation key, JSON-encoded.
	maxLineBytes = 8 << 10
	// tempSuffix marks a rewrite in progress; one left behind by a crash
	// is removed by the next Open.
	tempSuffix = ".tmp-"
)

// ErrInvalidID is returned by Record for an empty or overlong id.
var ErrInvalidID = errors.New("owners: invalid id")

// Registry is what the proxy needs of an owners store: this package's
// Store, or one shared by cllama replicas (internal/sharedstate).
type Registry interface {
	Owner(id string) (Owner, bool)
	Record(id string, o Owner) error
	Forget(id string) error
	Close() error
}

var _ Registry = (*Store)(nil)

// Owner is who created a stored object.
type Owner struct {
	// Agent is the id of the agent whose request created it.
	Agent string `json:"agent"`
	// Provider is the name of the provider that stores it.
	Provider string `json:"provider"`
	// Conversation is the key of the conversation it belongs to, for
	// per-conversation budgets: a request continuing from it continues
	// that conversation ("" when none was computed).
	Conversation string `json:"conversation,omitempty"`
}

// Options configure a Store. Zero values mean the defaults.
type Options struct {
	// Dir holds the log (created 0700 when missing); "" keeps the store
	// in memory only.
	Dir string
	// Max bounds the ids remembered (default DefaultMax).
	Max int
	// SyncEvery is the background fsync interval (default
	// DefaultSyncEvery).
	SyncEvery time.Duration
	// OnError is told of failures in the background: an fsync or a
	// rewrite of the log. The ids concerned stay in memory.
	OnError func(error)
	// OnRepair is told when Open cut a partial last line off the log (a
	// write a crash cut short).
	OnRepair func(jsonl.Cut)
}

// line is one line of the log: an id recorded for an owner, or forgotten.
type line struct {
	ID string `json:"id"`
	Owner
	Forget bool `json:"forget,omitempty"`
}

// slot is one id in the ring, oldest first from Store.next.
type slot struct {
	id    string
	owner Owner
}

// Store maps stored objects' ids to their owners. Use Open.
type Store struct {
	dir, path string
	max       int
	// limit is how many lines the log may hold before it is rewritten;
	// compactAt is the current threshold (later after a failed rewrite).
	limit, compactAt int
	syncEvery        time.Duration
	onError          func(error)
	onRepair         func(jsonl.Cut)

	// mu guards the index. Lookups take it for reading only.
	mu sync.RWMutex
	// ring holds the ids in the order they were recorded; once it holds
	// max slots, next is the oldest, which the next id overwrites. A
	// forgotten id leaves an empty slot.
	ring  []slot
	next  int
	index map[string]int // id → position in ring

	// fmu guards the log and serialises writers, so lines reach the log
	// in the order the index changed.
	fmu   sync.Mutex
	f     *os.File // nil: memory only, or closed
	size  int64    // where the next line starts
	lines int
	dirty bool // written since the last fsync
	torn  bool // a failed write could not be cut back
	// pending collects the lines written while a rewrite is under way,
	// to be appended to the new log before it replaces the old one.
	compacting bool
	pending    [][]byte

	stop, done chan struct{}
	wg         sync.WaitGroup // background rewrites
	closed     bool
}

// Open opens a store, replaying the log of o.Dir when there is one. A
// partial last line (a crash) is cut off first; a log with lines that do
// not decode (a power loss, damage) is rewritten from what did decode
// before Open returns.
func Open(o Options) (*Store, error) {
	s := &Store{dir: o.Dir, max: o.Max, syncEvery: o.SyncEvery, onError: o.OnError, onRepair: o.OnRepair, index: map[string]int{}}
	if s.max <= 0 {
		s.max = DefaultMax
	}
	if s.syncEvery <= 0 {
		s.syncEvery = DefaultSyncEvery
	}
	s.limit = max(2*s.max, compactMinLines)
	s.compactAt = s.limit
	if s.dir == "" {
		return s, nil
	}
	s.path = filepath.Join(s.dir, FileName)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("stored responses: %w", err)
	}
	if err := s.load(); err != nil {
		return nil, fmt.Errorf("stored responses: %w", err)
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.syncLoop()
	return s, nil
}

// load cuts a partial last line off the log and replays it, then keeps it
// open for appending, or rewrites it first when it holds lines that do not
// decode, or is long.
func (s *Store) load() error {
	leftovers, _ := filepath.Glob(s.path + tempSuffix + "*")
	for _, name := range leftovers {
		_ = os.Remove(name)
	}
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	cut, err := jsonl.CutTornTail(f)
	if err != nil {
		_ = f.Close()
		return err
	}
	if cut.Bytes > 0 && s.onRepair != nil {
		s.onRepair(cut)
	}
	lines, bad := 0, 0
	for l, err := range jsonl.Numbered(f, maxLineBytes) {
		switch {
		case errors.Is(err, jsonl.ErrLineTooLong):
			bad++
			continue
		case err != nil:
			_ = f.Close()
			return fmt.Errorf("reading %s: %w", s.path, err)
		}
		lines++
		var ln line
		if json.Unmarshal(l.Text, &ln) != nil || ln.ID == "" || len(ln.ID) > MaxIDBytes {
			bad++
			continue
		}
		if ln.Forget {
			s.forgetLocked(ln.ID)
		} else {
			s.putLocked(ln.ID, ln.Owner)
		}
	}
	if bad == 0 && lines <= s.compactAt {
		s.f, s.size, s.lines = f, cut.Offset, lines
		return nil
	}
	_ = f.Close()
	nf, size, n, err := s.rewrite(s.snapshot())
	if err != nil {
		return fmt.Errorf("rewriting %s: %w", s.path, err)
	}
	s.f, s.size, s.lines = nf, size, n
	return nil
}

// Owner returns the owner of id; ok is false when the store does not know
// it (never recorded, forgotten, or evicted).
func (s *Store) Owner(id string) (o Owner, ok bool) {
	s.mu.RLock()
	i, ok := s.index[id]
	if ok {
		o = s.ring[i].owner
	}
	s.mu.RUnlock()
	return o, ok
}

// Len is the number of ids remembered.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.index)
}

// Record remembers that o owns id, forgetting the oldest id when the store
// is full. An id recorded again takes the new owner and counts as the
// newest. The id is known to
// lookups before Record returns, whatever the error: a non-nil error
// (other than ErrInvalidID) means its line did not reach the log, so it
// will not survive a restart.
func (s *Store) Record(id string, o Owner) error {
	if id == "" || len(id) > MaxIDBytes {
		return fmt.Errorf("%w: %d bytes (1 to %d)", ErrInvalidID, len(id), MaxIDBytes)
	}
	var b []byte
	if s.dir != "" {
		var err error
		if b, err = json.Marshal(line{ID: id, Owner: o}); err != nil {
			return err
		}
	}
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.mu.Lock()
	s.putLocked(id, o)
	s.mu.Unlock()
	if b == nil {
		return nil
	}
	return s.appendLocked(append(b, '\n'))
}

// Forget drops id (its object was deleted), on disk too.
func (s *Store) Forget(id string) error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.mu.Lock()
	known := s.forgetLocked(id)
	s.mu.Unlock()
	if !known || s.dir == "" {
		return nil
	}
	b, err := json.Marshal(line{ID: id, Forget: true})
	if err != nil {
		return err
	}
	return s.appendLocked(append(b, '\n'))
}

// putLocked indexes id; s.mu is held (or the store is being opened).
func (s *Store) putLocked(id string, o Owner) {
	if i, ok := s.index[id]; ok {
		// Recorded again: it moves to the newest place, as a replay of
		// the log would put it.
		s.ring[i] = slot{}
		delete(s.index, id)
	}
	if len(s.ring) < s.max {
		s.index[id] = len(s.ring)
		s.ring = append(s.ring, slot{id, o})
		return
	}
	if old := s.ring[s.next].id; old != "" {
		delete(s.index, old)
	}
	s.ring[s.next] = slot{id, o}
	s.index[id] = s.next
	s.next = (s.next + 1) % s.max
}

// forgetLocked drops id from the index, reporting whether it was there.
func (s *Store) forgetLocked(id string) bool {
	i, ok := s.index[id]
	if ok {
		s.ring[i] = slot{}
		delete(s.index, id)
	}
	return ok
}

// snapshot is every remembered id, oldest first.
func (s *Store) snapshot() []slot {
	out := make([]slot, 0, len(s.index))
	for k := range s.ring {
		if sl := s.ring[(s.next+k)%len(s.ring)]; sl.id != "" {
			out = append(out, sl)
		}
	}
	return out
}

// appendLocked writes one line to the log; s.fmu is held. A failed write
// is cut back off, so the next line starts on a line of its own.
func (s *Store) appendLocked(b []byte) error {
	if s.f == nil {
		return nil
	}
	if s.torn {
		if err := s.f.Truncate(s.size); err != nil {
			return fmt.Errorf("stored responses: %s ends in a partial line: %w", s.path, err)
		}
		s.torn = false
	}
	if _, err := s.f.Write(b); err != nil {
		s.torn = s.f.Truncate(s.size) != nil
		return fmt.Errorf("stored responses: append to %s: %w", s.path, err)
	}
	s.size += int64(len(b))
	s.lines++
	s.dirty = true
	if s.compacting {
		s.pending = append(s.pending, b)
	} else if s.lines > s.compactAt && !s.closed {
		s.startCompaction()
	}
	return nil
}

// startCompaction rewrites the log in the background from a snapshot of
// the index taken now; s.fmu is held, so every line written from here on
// goes to pending and reaches the new log too.
func (s *Store) startCompaction() {
	s.mu.RLock()
	snap := s.snapshot()
	s.mu.RUnlock()
	s.compacting, s.pending = true, nil
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.compact(snap)
	}()
}

// compact writes snap to a new log and, holding s.fmu, appends the lines
// written meanwhile and renames it over the old one. On failure the old
// log stays, whole, and the rewrite is tried again compactMinLines lines
// later.
func (s *Store) compact(snap []slot) {
	tmp, err := s.writeTemp(snap)
	s.fmu.Lock()
	defer s.fmu.Unlock()
	pending := s.pending
	s.compacting, s.pending = false, nil
	var f *os.File
	var size int64
	var n int
	if err == nil {
		f, size, n, err = s.finish(tmp, len(snap), pending)
	}
	if err != nil {
		s.compactAt = s.lines + compactMinLines
		s.report(fmt.Errorf("stored responses: rewriting %s: %w (the previous log is kept)", s.path, err))
		return
	}
	if s.f != nil {
		_ = s.f.Close()
	}
	s.f, s.size, s.lines, s.dirty, s.torn = f, size, n, false, false
	s.compactAt = s.limit
}

// rewrite replaces the log with snap, and returns the new log open for
// appending, its size and its line count.
func (s *Store) rewrite(snap []slot) (*os.File, int64, int, error) {
	tmp, err := s.writeTemp(snap)
	if err != nil {
		return nil, 0, 0, err
	}
	return s.finish(tmp, len(snap), nil)
}

// writeTemp writes snap to a new temporary file next to the log; on error
// nothing is left behind.
func (s *Store) writeTemp(snap []slot) (*os.File, error) {
	tmp, err := os.CreateTemp(s.dir, FileName+tempSuffix+"*")
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(tmp, 64<<10)
	enc := json.NewEncoder(bw)
	for _, sl := range snap {
		if err = enc.Encode(line{ID: sl.id, Owner: sl.owner}); err != nil {
			break
		}
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// finish appends extra to tmp (which holds n lines), makes it durable and
// renames it over the log. It returns the new log open for appending (the
// handle is opened before the rename, so nothing can fail once the log is
// replaced), its size and line count. tmp is closed, and removed on error.
func (s *Store) finish(tmp *os.File, n int, extra [][]byte) (f *os.File, size int64, lines int, err error) {
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			if f != nil {
				_ = f.Close()
				f = nil
			}
		}
	}()
	for _, b := range extra {
		if _, err = tmp.Write(b); err != nil {
			return
		}
	}
	if err = tmp.Sync(); err != nil {
		return
	}
	if size, err = tmp.Seek(0, io.SeekEnd); err != nil {
		return
	}
	if f, err = os.OpenFile(tmp.Name(), os.O_RDWR|os.O_APPEND, 0o600); err != nil {
		return
	}
	if err = tmp.Close(); err != nil {
		return
	}
	if err = os.Rename(tmp.Name(), s.path); err != nil {
		return
	}
	// The new name must survive a power loss too.
	if d, derr := os.Open(s.dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return f, size, n + len(extra), nil
}

// syncLoop fsyncs the log once per interval when it changed, until Close.
func (s *Store) syncLoop() {
	defer close(s.done)
	t := time.NewTicker(s.syncEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.syncIfDirty()
		}
	}
}

// syncIfDirty fsyncs the log outside s.fmu, so writers do not wait on the
// disk; a rewrite that replaces the log meanwhile has synced its own.
func (s *Store) syncIfDirty() {
	s.fmu.Lock()
	f := s.f
	dirty := s.dirty && f != nil
	s.dirty = false
	s.fmu.Unlock()
	if !dirty {
		return
	}
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		s.fmu.Lock()
		s.dirty = s.f == f
		s.fmu.Unlock()
		s.report(fmt.Errorf("stored responses: sync %s: %w (retried next interval)", s.path, err))
	}
}

func (s *Store) report(err error) {
	if s.onError != nil {
		s.onError(err)
	}
}

// Close waits for a rewrite under way, fsyncs the log and closes it. The
// store still answers lookups and records ids afterwards, in memory only.
func (s *Store) Close() error {
	if s == nil || s.stop == nil {
		return nil
	}
	s.fmu.Lock()
	if s.closed {
		s.fmu.Unlock()
		return nil
	}
	s.closed = true
	s.fmu.Unlock()
	close(s.stop)
	<-s.done
	s.wg.Wait()
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if s.f == nil {
		return nil
	}
	err := errors.Join(s.f.Sync(), s.f.Close())
	s.f = nil
	if err != nil {
		return fmt.Errorf("stored responses: closing %s: %w", s.path, err)
	}
	return nil
}
