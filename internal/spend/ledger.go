package spend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Charge is one counter a call is admitted against: admitted while the
// counter's settled amount plus its reservations is below Limit; Reserve
// is then added to its reservations. Check false adds Reserve without
// checking (a mediated turn's requests count once, at its first call).
type Charge struct {
	Key     string
	Limit   int64
	Reserve int64
	Check   bool
	// Expires is when the counter may be forgotten (its window's end and
	// a day; zero: never).
	Expires time.Time
}

// Settlement replaces a reservation with the amount actually spent.
type Settlement struct {
	Key      string
	Reserved int64
	Actual   int64
	Expires  time.Time
}

// Ledger keeps the counters of every budget. Implementations are safe for
// concurrent use and apply each call atomically: across counters, and
// across replicas sharing one.
type Ledger interface {
	// Reserve admits cs together or not at all. refused is the index of
	// the first checked counter at its limit (-1: admitted), with its
	// settled amount and reservations.
	Reserve(ctx context.Context, cs []Charge) (refused int, settled, reserved int64, err error)
	// Settle applies ss and returns each counter's settled amount after.
	Settle(ctx context.Context, ss []Settlement) ([]int64, error)
	// Spent returns the settled amount of each key (0 when unknown).
	Spent(ctx context.Context, keys []string) ([]int64, error)
}

// counter is one budget counter of a FileLedger.
type counter struct {
	Settled  int64     `json:"settled"`
	Reserved int64     `json:"-"`
	Expires  time.Time `json:"expires,omitzero"`
}

// FileLedger keeps counters in memory and their settled amounts in a
// file (written whole, through a temporary file and a rename, after each
// settlement), so that spend survives a restart. Reservations are not
// kept: requests in flight end with the process. An empty path keeps
// memory only.
type FileLedger struct {
	path string
	now  func() time.Time

	mu       sync.Mutex
	counters map[string]*counter
}

// maxLedgerBytes bounds the ledger file read at start.
const maxLedgerBytes = 64 << 20

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
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var saved map[string]*counter
	dec := json.NewDecoder(&limitedReader{f, maxLedgerBytes})
	if err := dec.Decode(&saved); err != nil {
		return nil, fmt.Errorf("%s: %v (move it aside to start the budgets' windows afresh)", path, err)
	}
	t := now()
	for k, c := range saved {
		if c != nil && (c.Expires.IsZero() || c.Expires.After(t)) {
			l.counters[k] = &counter{Settled: c.Settled, Expires: c.Expires}
		}
	}
	return l, nil
}

type limitedReader struct {
	f *os.File
	n int64
}

func (r *limitedReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, errors.New("ledger file too large")
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	n, err := r.f.Read(p)
	r.n -= int64(n)
	return n, err
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

// Settle implements Ledger.
func (l *FileLedger) Settle(_ context.Context, ss []Settlement) ([]int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int64, len(ss))
	for i, s := range ss {
		c := l.get(s.Key, s.Expires)
		c.Reserved = max(c.Reserved-s.Reserved, 0)
		c.Settled += s.Actual
		out[i] = c.Settled
	}
	return out, l.save()
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

// save writes the settled counters; the caller holds l.mu.
func (l *FileLedger) save() error {
	if l.path == "" {
		return nil
	}
	t := l.now()
	keep := make(map[string]*counter, len(l.counters))
	for k, c := range l.counters {
		if !c.Expires.IsZero() && !c.Expires.After(t) {
			delete(l.counters, k)
			continue
		}
		if c.Settled != 0 {
			keep[k] = c
		}
	}
	b, err := json.Marshal(keep)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.path), ".spend-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), l.path)
}
