package spend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawdapus/clawgo/internal/durable"
	"github.com/clawdapus/clawgo/internal/jsonl"
)

// FileLedger keeps counters in memory and their settled amounts on disk
// (under CLLAMA_STATE_DIR), so that spend survives a restart, a crash and
// a power loss:
//
//   - path (spend.json) is a snapshot: every counter's settled amount and
//     expiry, and the number of the last settlement it holds. It is only
//     ever replaced whole: written to a temporary file that is fsync'ed,
//     renamed over it, and the directory fsync'ed.
//   - path + ".log" holds, one JSON line each, the settlements since the
//     snapshot, numbered. Settle returns once its line is written and
//     fsync'ed: what Settle acknowledged is on disk. Settlements that
//     arrive together share one write and one fsync. (A Turn settles
//     without waiting and waits in Close: see Turn.Close.)
//   - Once the log is large (and at every open and close) the snapshot is
//     rewritten and the log emptied. A crash between the two leaves lines
//     the snapshot already holds; their numbers tell replay to skip them.
//
// At open a partial last line (a write a crash cut short, never
// acknowledged) is cut off, and a line that does not decode is skipped.
// Reservations are not kept: the calls in flight at a crash are lost. An
// empty path keeps memory only. One process opens a path at a time.
type FileLedger struct {
	path, logPath string
	now           func() time.Time

	// mu guards the counters and the settlements not yet written.
	mu       sync.Mutex
	counters map[string]*counter
	seq      uint64 // the number of the last settlement
	pending  []byte // the lines of the settlements after the log's
	closed   bool

	// fileMu guards the files: it serialises the writes, fsyncs and
	// rewrites, none of which holds mu, so admissions never wait on the
	// disk. It is taken before mu when both are.
	fileMu sync.Mutex
	log    *os.File // nil: memory only, or closed
	size   int64    // the log's length: where the next line starts
	torn   bool     // a failed write left a partial line that could not be cut
	// compactAt is the log's size that triggers a rewrite (later after
	// a failed one).
	compactAt int64
	// synced is the number of the last settlement known to be on disk.
	synced atomic.Uint64
}

// counter is one budget counter of a FileLedger.
type counter struct {
	Settled  int64     `json:"settled"`
	Reserved int64     `json:"-"`
	Expires  time.Time `json:"expires,omitzero"`
}

// snapshot is the content of the snapshot file.
type snapshot struct {
	// Seq is the number of the last settlement the snapshot holds.
	Seq      uint64              `json:"seq"`
	Counters map[string]*counter `json:"counters"`
}

// logLine is one settlement in the log.
type logLine struct {
	Seq uint64     `json:"q"`
	Set []logEntry `json:"s"`
}

// logEntry is one counter's part of a settlement: the amount added and
// its expiry (Unix milliseconds; 0: never).
type logEntry struct {
	Key     string `json:"k"`
	Add     int64  `json:"a"`
	Expires int64  `json:"e,omitempty"`
}

const (
	// maxLedgerBytes bounds the snapshot read at open.
	maxLedgerBytes = 64 << 20
	// maxLogLineBytes bounds a log line read back.
	maxLogLineBytes = 1 << 20
	// maxPendingBytes bounds the settlements kept in memory unwritten:
	// past it, the settlement that crossed it writes them.
	maxPendingBytes = 256 << 10
	// tempPrefix starts the name of a snapshot being written; one a
	// crash left behind is removed at open.
	tempPrefix = ".spend-"
)

// compactBytes is the log's size from which the snapshot is rewritten (a
// variable for the tests).
var compactBytes int64 = 4 << 20

// OpenFileLedger opens the ledger kept in path (created on the first
// settlement), dropping the counters whose windows have ended.
func OpenFileLedger(path string, now func() time.Time) (*FileLedger, error) {
	if now == nil {
		now = time.Now
	}
	l := &FileLedger{path: path, now: now, counters: map[string]*counter{}}
	if path == "" {
		return l, nil
	}
	l.logPath = path + ".log"
	if err := l.readSnapshot(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(l.logPath, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := l.replay(f); err != nil {
		f.Close()
		return nil, err
	}
	l.log = f
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), tempPrefix+"*"))
	for _, name := range leftovers {
		_ = os.Remove(name)
	}
	// A fresh snapshot: the log starts empty, the windows that ended
	// are dropped, and the log's name is on disk.
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if err := l.compact(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// readSnapshot loads the snapshot, if there is one. A spend.json written
// before the log existed is a bare map of counters.
func (l *FileLedger) readSnapshot() error {
	b, err := readBounded(l.path, maxLedgerBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err == nil && snap.Counters == nil {
		err = json.Unmarshal(b, &snap.Counters)
	}
	if err != nil {
		return fmt.Errorf("%s: %v (move it and %s aside to start the budgets' windows afresh)", l.path, err, filepath.Base(l.logPath))
	}
	t := l.now()
	for k, c := range snap.Counters {
		if c != nil && (c.Expires.IsZero() || c.Expires.After(t)) {
			l.counters[k] = &counter{Settled: c.Settled, Expires: c.Expires}
		}
	}
	l.seq = snap.Seq
	return nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, err
}

// replay cuts a partial last line off the log and applies the
// settlements the snapshot does not hold.
func (l *FileLedger) replay(f *os.File) error {
	if _, err := jsonl.CutTornTail(f); err != nil {
		return err
	}
	for ln, err := range jsonl.Numbered(f, maxLogLineBytes) {
		if errors.Is(err, jsonl.ErrLineTooLong) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", l.logPath, err)
		}
		var rec logLine
		if json.Unmarshal(ln.Text, &rec) != nil || rec.Seq <= l.seq {
			// Damage (never acknowledged), or already in the snapshot.
			continue
		}
		for _, e := range rec.Set {
			var exp time.Time
			if e.Expires != 0 {
				exp = time.UnixMilli(e.Expires)
			}
			l.get(e.Key, exp).Settled += e.Add
		}
		l.seq = rec.Seq
	}
	return nil
}

// appendLocked adds the line of the settlement ss to the pending ones and
// returns its number (0 when it changes nothing on disk, or the ledger
// keeps memory only). The caller holds l.mu.
func (l *FileLedger) appendLocked(ss []Settlement) (uint64, error) {
	if l.path == "" || l.closed {
		return 0, nil
	}
	rec := logLine{Seq: l.seq + 1}
	for _, s := range ss {
		if s.Actual == 0 {
			continue
		}
		e := logEntry{Key: s.Key, Add: s.Actual}
		if c := l.counters[s.Key]; c != nil && !c.Expires.IsZero() {
			e.Expires = c.Expires.UnixMilli()
		}
		rec.Set = append(rec.Set, e)
	}
	if len(rec.Set) == 0 {
		return 0, nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	l.pending = append(append(l.pending, b...), '\n')
	l.seq = rec.Seq
	return rec.Seq, nil
}

// syncTo returns once the settlement numbered seq is on disk: written and
// fsync'ed by this call, together with every settlement before it, or by
// another one's.
func (l *FileLedger) syncTo(seq uint64) error {
	if l.synced.Load() >= seq {
		return nil
	}
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if l.synced.Load() >= seq {
		return nil // another settlement's fsync took it along
	}
	if l.log == nil {
		return fmt.Errorf("%s: closed", l.logPath)
	}
	l.mu.Lock()
	large := l.size+int64(len(l.pending)) >= l.compactAt
	l.mu.Unlock()
	if large {
		if err := l.compact(); err == nil {
			return nil
		}
	}
	l.mu.Lock()
	buf, upTo := l.pending, l.seq
	l.pending = nil
	l.mu.Unlock()
	if err := l.write(buf); err != nil {
		return err
	}
	if err := l.log.Sync(); err != nil {
		return fmt.Errorf("%s: %w", l.logPath, err)
	}
	l.markSynced(upTo)
	return nil
}

// write appends buf, whole lines, to the log with one write(2). The
// caller holds l.fileMu.
func (l *FileLedger) write(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	if l.torn {
		// Start on a line of its own after the partial one.
		buf = append([]byte{'\n'}, buf...)
	}
	n, err := l.log.Write(buf)
	if err != nil {
		// A partial line must not glue itself to the next one.
		if n > 0 {
			if terr := l.log.Truncate(l.size); terr != nil {
				l.torn, l.size = true, l.size+int64(n)
			}
		}
		return fmt.Errorf("%s: %w", l.logPath, err)
	}
	l.torn = false
	l.size += int64(n)
	return nil
}

// markSynced raises synced to seq.
func (l *FileLedger) markSynced(seq uint64) {
	for {
		old := l.synced.Load()
		if old >= seq || l.synced.CompareAndSwap(old, seq) {
			return
		}
	}
}

// compact writes the snapshot of every live counter, with every
// settlement so far, and empties the log. The caller holds l.fileMu.
func (l *FileLedger) compact() error {
	t := l.now()
	l.mu.Lock()
	snap := snapshot{Seq: l.seq, Counters: make(map[string]*counter, len(l.counters))}
	for k, c := range l.counters {
		if !c.Expires.IsZero() && !c.Expires.After(t) {
			if c.Reserved == 0 {
				delete(l.counters, k)
			}
			continue
		}
		if c.Settled != 0 {
			snap.Counters[k] = &counter{Settled: c.Settled, Expires: c.Expires}
		}
	}
	b, err := json.Marshal(snap)
	pending := l.pending
	l.pending = nil
	l.mu.Unlock()
	if err == nil {
		err = durableReplace(l.path, b)
	}
	if err != nil {
		// The settlements go to the log instead; a rewrite is tried
		// again later.
		l.compactAt = l.size + compactBytes
		if werr := l.write(pending); werr != nil {
			return errors.Join(err, werr)
		}
		return err
	}
	// The snapshot holds every settlement so far: the log's lines are
	// redundant (and skipped by number should the truncation not reach
	// the disk).
	l.markSynced(snap.Seq)
	if err := l.log.Truncate(0); err != nil {
		l.compactAt = l.size + compactBytes
		return fmt.Errorf("%s: %w", l.logPath, err)
	}
	l.size, l.torn, l.compactAt = 0, false, compactBytes
	return nil
}

// Close writes a last snapshot and closes the log. The ledger still
// answers from memory after.
func (l *FileLedger) Close() error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if l.log == nil {
		return nil
	}
	err := errors.Join(l.compact(), l.log.Sync(), l.log.Close())
	l.log = nil
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return err
}

func (l *FileLedger) get(key string, expires time.Time) *counter {
	c := l.counters[key]
	if c == nil || (!c.Expires.IsZero() && !c.Expires.After(l.now())) {
		c = &counter{}
		l.counters[key] = c
	}
	if expires.After(c.Expires) || expires.IsZero() {
		c.Expires = expires
	}
	return c
}

// Reserve implements Ledger.
func (l *FileLedger) Reserve(_ context.Context, cs []Charge) (int, int64, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ch := range cs {
		c := l.get(ch.Key, ch.Expires)
		if ch.Check && c.Settled+c.Reserved >= ch.Limit {
			return i, c.Settled, c.Reserved, nil
		}
	}
	for _, ch := range cs {
		l.counters[ch.Key].Reserved += ch.Reserve
	}
	return -1, 0, 0, nil
}

// Settle implements Ledger. It returns once the settlement is on disk
// (with a path): a settlement it acknowledged survives a crash.
func (l *FileLedger) Settle(_ context.Context, ss []Settlement) ([]int64, error) {
	out, seq, err := l.settle(ss)
	if err != nil || seq == 0 {
		return out, err
	}
	return out, l.syncTo(seq)
}

// settle applies ss and adds it to the settlements to write, and returns
// the number to pass to syncTo for it to be on disk (0: nothing to wait
// for).
func (l *FileLedger) settle(ss []Settlement) ([]int64, uint64, error) {
	l.mu.Lock()
	out := make([]int64, len(ss))
	for i, s := range ss {
		c := l.get(s.Key, s.Expires)
		c.Reserved = max(c.Reserved-s.Reserved, 0)
		c.Settled += s.Actual
		out[i] = c.Settled
	}
	seq, err := l.appendLocked(ss)
	full := len(l.pending) >= maxPendingBytes
	l.mu.Unlock()
	if err == nil && full {
		// Nobody waited for them this long (a meter whose turns are
		// never closed): written now, so memory stays bounded.
		err = l.syncTo(seq)
	}
	return out, seq, err
}

// Spent implements Ledger.
func (l *FileLedger) Spent(_ context.Context, keys []string) ([]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int64, len(keys))
	t := l.now()
	for i, k := range keys {
		if c := l.counters[k]; c != nil && (c.Expires.IsZero() || c.Expires.After(t)) {
			out[i] = c.Settled
		}
	}
	return out, nil
}

// durableReplace replaces path with b (durable.Replace).
func durableReplace(path string, b []byte) error {
	return durable.Replace(path, tempPrefix, 0o600, b)
}
