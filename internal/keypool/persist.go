package keypool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/durable"
)

// Shared is a store of key state several replicas share (Redis: see
// internal/sharedstate KeyStates). Values are opaque to it.
type Shared interface {
	// Put stores (an empty value: deletes) the state of a key and tells
	// the other replicas.
	Put(ctx context.Context, ref string, value []byte) error
	// All returns every stored state.
	All(ctx context.Context) (map[string][]byte, error)
	// Watch calls fn with each state another replica puts, until stop.
	Watch(fn func(ref string, value []byte)) (stop func())
}

// record is the stored state of one key.
type record struct {
	// CoolUntilMS: the key cools down until then (Unix milliseconds).
	CoolUntilMS int64 `json:"cool_until_ms,omitempty"`
	// DeadGen: the key is dead in this configuration generation.
	DeadGen string `json:"dead_gen,omitempty"`
}

func (r record) empty() bool { return r.CoolUntilMS == 0 && r.DeadGen == "" }

func (r record) coolUntil() time.Time {
	if r.CoolUntilMS == 0 {
		return time.Time{}
	}
	return time.UnixMilli(r.CoolUntilMS)
}

// Bounds of what is read back from the state file and the shared store.
const (
	maxRecordBytes = 256
	maxFileBytes   = 1 << 20
	maxRecords     = 4096
	maxRefBytes    = 512
)

// decodeRecord reads a stored key state, bounded; an empty value is an
// empty record.
func decodeRecord(b []byte) (record, error) {
	var r record
	if len(b) == 0 {
		return r, nil
	}
	if len(b) > maxRecordBytes {
		return r, fmt.Errorf("key state of %d bytes (at most %d)", len(b), maxRecordBytes)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return record{}, fmt.Errorf("key state: %w", err)
	}
	if r.CoolUntilMS < 0 || len(r.DeadGen) > 64 {
		return record{}, errors.New("key state: out of range")
	}
	return r, nil
}

// stateFile is the state file's content.
type stateFile struct {
	Version int               `json:"version"`
	Keys    map[string]record `json:"keys"`
}

// persister writes key state to the state file (in the background, the
// latest state once per change burst) and to the shared store (at once:
// another replica must not send with a key this one saw limited).
type persister struct {
	ps      *Pools
	path    string
	shared  Shared
	onError func(error)

	wake chan struct{}
	done chan struct{}
	// exited is closed when run has returned: no background write is
	// under way or to come.
	exited chan struct{}
	stop   func()
	close  func() error
	once   sync.Once
	flush  sync.Mutex
}

func newPersister(ps *Pools, path string, shared Shared, onError func(error)) (*persister, error) {
	p := &persister{ps: ps, path: path, shared: shared, onError: onError, wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	if p.onError == nil {
		p.onError = func(error) {}
	}
	if path != "" {
		if err := p.load(); err != nil {
			return nil, err
		}
	}
	if shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		all, err := shared.All(ctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("key state in the shared store: %w", err)
		}
		for ref, v := range all {
			if r, err := decodeRecord(v); err == nil && len(ref) <= maxRefBytes {
				ps.records[ref] = r
			}
		}
		p.stop = shared.Watch(func(ref string, v []byte) {
			r, err := decodeRecord(v)
			if err != nil || len(ref) > maxRefBytes {
				p.onError(fmt.Errorf("key state shared for %q: %v", ref, err))
				return
			}
			ps.applyShared(ref, r)
			p.poke()
		})
	}
	go p.run()
	p.close = func() error {
		var err error
		p.once.Do(func() {
			if p.stop != nil {
				p.stop()
			}
			close(p.done)
			// The last write is this one: the background writer has
			// stopped (a write it had begun is finished).
			<-p.exited
			err = p.write()
		})
		return err
	}
	return p, nil
}

// load reads the state file; a missing one is no state.
func (p *persister) load() error {
	f, err := os.Open(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("key state %s: %w", p.path, err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return fmt.Errorf("key state %s: %w", p.path, err)
	}
	n := len(buf)
	if n > maxFileBytes {
		return fmt.Errorf("key state %s: larger than %d bytes; remove it (cllama starts with every key active)", p.path, maxFileBytes)
	}
	var sf stateFile
	if err := json.Unmarshal(buf[:n], &sf); err != nil {
		return fmt.Errorf("key state %s: %v; remove it (cllama starts with every key active)", p.path, err)
	}
	for ref, r := range sf.Keys {
		if len(p.ps.records) >= maxRecords {
			break
		}
		if r.CoolUntilMS >= 0 && len(r.DeadGen) <= 64 && len(ref) <= maxRefBytes && !r.empty() {
			p.ps.records[ref] = r
		}
	}
	return nil
}

// changed records a key's new state: shared now, written to the file soon.
func (p *persister) changed(ref string, r record) {
	if p.shared != nil {
		var v []byte
		if !r.empty() {
			v, _ = json.Marshal(r)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := p.shared.Put(ctx, ref, v); err != nil {
			p.onError(fmt.Errorf("sharing key state: %w", err))
		}
		cancel()
	}
	p.poke()
}

func (p *persister) poke() {
	if p.path == "" {
		return
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *persister) run() {
	defer close(p.exited)
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
			if err := p.write(); err != nil {
				p.onError(err)
			}
		}
	}
}

// write replaces the state file with the current state (expired
// cooldowns left out).
func (p *persister) write() error {
	if p.path == "" {
		return nil
	}
	p.flush.Lock()
	defer p.flush.Unlock()
	now := p.ps.o.Now().UnixMilli()
	sf := stateFile{Version: 1, Keys: map[string]record{}}
	p.ps.mu.Lock()
	for ref, r := range p.ps.records {
		if r.CoolUntilMS <= now {
			r.CoolUntilMS = 0
		}
		if !r.empty() && len(sf.Keys) < maxRecords {
			sf.Keys[ref] = r
		}
	}
	p.ps.mu.Unlock()
	b, err := json.Marshal(sf)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return fmt.Errorf("key state: %w", err)
	}
	// Replaced whole and durably: a crash leaves the last state or this one.
	if err := durable.Replace(p.path, "."+filepath.Base(p.path)+".tmp", 0o600, b); err != nil {
		return fmt.Errorf("key state: %w", err)
	}
	return nil
}
