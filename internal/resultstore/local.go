package resultstore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/durable"
)

// Local is a Store in one process: in files under a directory (cllama's
// state directory, so handles survive a restart), or in memory when it
// has none.
//
// Durability: a handle is returned only once its file is complete on
// disk (written beside, synced, renamed into place, the directory
// synced): a crash leaves either the whole result or no file under the
// handle's name. Opening the directory again drops what a crash left
// half-written (temporary files, files whose size disagrees with their
// header) and every expired handle.
type Local struct {
	dir    string
	limits Limits
	now    func() time.Time

	mu sync.Mutex
	// byHandle are the live entries; order is the same, oldest first.
	byHandle map[string]*localEntry
	order    []*localEntry
	// total and perAgent are the bytes held (and perAgentN the entries).
	total     int64
	perAgent  map[string]int64
	perAgentN map[string]int
}

type localEntry struct {
	handle string
	meta   Meta
	// header is where the body starts in the entry's file; data holds
	// the body of an entry kept in memory.
	header int64
	data   []byte
}

// LocalOptions configure OpenLocal.
type LocalOptions struct {
	// Dir holds the entries, one file each; empty keeps them in memory.
	Dir    string
	Limits Limits
	// Now is the clock (expiry, eviction order). Default time.Now.
	Now func() time.Time
}

// tmpPrefix names a file being written.
const tmpPrefix = ".tmp-"

// OpenLocal opens (creating) a Local store and loads what Dir holds.
func OpenLocal(o LocalOptions) (*Local, error) {
	l := &Local{dir: o.Dir, limits: o.Limits.WithDefaults(), now: o.Now, byHandle: map[string]*localEntry{},
		perAgent: map[string]int64{}, perAgentN: map[string]int{}}
	if err := l.limits.Validate(); err != nil {
		return nil, err
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.dir == "" {
		return l, nil
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, fmt.Errorf("result store: %w", err)
	}
	if err := l.load(); err != nil {
		return nil, err
	}
	return l, nil
}

// load reads every entry's header, dropping what a crash left and what
// expired, then applies the bounds (they may have been lowered).
func (l *Local) load() error {
	des, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("result store: %w", err)
	}
	now := l.now()
	var entries []*localEntry
	for _, de := range des {
		name := de.Name()
		path := filepath.Join(l.dir, name)
		if strings.HasPrefix(name, tmpPrefix) {
			_ = os.Remove(path)
			continue
		}
		if !ValidHandle(name) || !de.Type().IsRegular() {
			continue // not ours
		}
		e, err := readEntry(path, name)
		if err != nil || !now.Before(e.meta.Expires) {
			_ = os.Remove(path)
			continue
		}
		entries = append(entries, e)
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].meta.Created.Before(entries[j].meta.Created) })
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range entries {
		l.insert(e)
	}
	l.evict()
	return nil
}

// readEntry reads an entry file's header and checks its size.
func readEntry(path, handle string) (*localEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	line, err := bufio.NewReaderSize(f, 4096).ReadSlice('\n')
	if err != nil {
		return nil, errors.New("no complete header")
	}
	e := &localEntry{handle: handle, header: int64(len(line))}
	if err := json.Unmarshal(line, &e.meta); err != nil {
		return nil, err
	}
	if e.meta.Size < 0 || st.Size() != e.header+e.meta.Size {
		return nil, errors.New("size disagrees with header")
	}
	return e, nil
}

// Limits implements Store.
func (l *Local) Limits() Limits { return l.limits }

// Put implements Store.
func (l *Local) Put(_ context.Context, scope Scope, tool string, body []byte, ttl time.Duration) (string, error) {
	if int64(len(body)) > l.limits.MaxResultBytes {
		return "", ErrTooLarge
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	now := l.now()
	h := NewHandle()
	e := &localEntry{handle: h, meta: Meta{Agent: scope.Agent, Conversation: scope.Conversation, Tool: tool, Size: int64(len(body)), Created: now, Expires: now.Add(ttl)}}
	if l.dir == "" {
		e.data = bytes.Clone(body)
	} else if err := l.write(e, body); err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	l.insert(e)
	l.evict()
	return h, nil
}

// write puts e's file in place: header line, body, synced, renamed.
func (l *Local) write(e *localEntry, body []byte) error {
	header, err := json.Marshal(e.meta)
	if err != nil {
		return err
	}
	header = append(header, '\n')
	e.header = int64(len(header))
	if err := durable.Replace(filepath.Join(l.dir, e.handle), tmpPrefix+e.handle, 0o600, header, body); err != nil {
		return fmt.Errorf("result store: %w", err)
	}
	return nil
}

// insert adds e (l.mu held).
func (l *Local) insert(e *localEntry) {
	l.byHandle[e.handle] = e
	l.order = append(l.order, e)
	l.total += e.meta.Size
	l.perAgent[e.meta.Agent] += e.meta.Size
	l.perAgentN[e.meta.Agent]++
}

// sweep drops expired entries (l.mu held).
func (l *Local) sweep(now time.Time) {
	kept := l.order[:0]
	for _, e := range l.order {
		if now.Before(e.meta.Expires) {
			kept = append(kept, e)
			continue
		}
		l.drop(e)
	}
	clear(l.order[len(kept):])
	l.order = kept
}

// evict drops the oldest entries until the bounds hold: an entry goes
// when its agent holds more than its share, or the store more than its
// total; the newest entry (the one just put) stays (l.mu held).
func (l *Local) evict() {
	over := func(e *localEntry) bool {
		a := e.meta.Agent
		return l.perAgent[a] > l.limits.MaxAgentBytes || l.perAgentN[a] > l.limits.MaxAgentEntries || l.total > l.limits.MaxBytes
	}
	kept := l.order[:0]
	for i, e := range l.order {
		if over(e) && i < len(l.order)-1 {
			l.drop(e)
			continue
		}
		kept = append(kept, e)
	}
	clear(l.order[len(kept):])
	l.order = kept
}

// drop forgets e and removes its file (l.mu held; not from l.order).
func (l *Local) drop(e *localEntry) {
	delete(l.byHandle, e.handle)
	l.total -= e.meta.Size
	a := e.meta.Agent
	l.perAgent[a] -= e.meta.Size
	if l.perAgentN[a]--; l.perAgentN[a] <= 0 {
		delete(l.perAgent, a)
		delete(l.perAgentN, a)
	}
	if l.dir != "" {
		_ = os.Remove(filepath.Join(l.dir, e.handle))
	}
}

// Open implements Store.
func (l *Local) Open(_ context.Context, scope Scope, handle string) (Body, bool, error) {
	if !ValidHandle(handle) {
		return nil, false, nil
	}
	l.mu.Lock()
	e, ok := l.byHandle[handle]
	ok = ok && e.meta.Agent == scope.Agent && e.meta.Conversation == scope.Conversation && l.now().Before(e.meta.Expires)
	l.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	if e.data != nil || l.dir == "" {
		return memBody{bytes.NewReader(e.data)}, true, nil
	}
	f, err := os.Open(filepath.Join(l.dir, handle))
	if err != nil {
		// Evicted between the lookup and the open: gone, like any other.
		return nil, false, nil
	}
	return &fileBody{f: f, off: e.header, size: e.meta.Size}, true, nil
}

// Len is the number of live handles and the bytes they hold.
func (l *Local) Len() (n int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byHandle), l.total
}

type memBody struct{ *bytes.Reader }

func (memBody) Close() error { return nil }

// fileBody is an entry file's body: its bytes after the header.
type fileBody struct {
	f         *os.File
	off, size int64
}

func (b *fileBody) ReadAt(p []byte, off int64) (int, error) {
	if off >= b.size {
		return 0, io.EOF
	}
	if rest := b.size - off; int64(len(p)) > rest {
		n, err := b.f.ReadAt(p[:rest], b.off+off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return b.f.ReadAt(p, b.off+off)
}

func (b *fileBody) Size() int64  { return b.size }
func (b *fileBody) Close() error { return b.f.Close() }
