package agentctx

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/filewatch"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// ErrUnknownAgent means there is no metadata.json for the agent id (or the id
// is not a valid agent id). Callers must not tell it apart from a wrong
// secret in anything the client sees.
var ErrUnknownAgent = errors.New("agentctx: unknown agent")

// Size caps for the files of one agent. They are compiled by claw and small;
// anything larger is a mistake, and reading it unbounded would let one file
// exhaust the proxy's memory.
const (
	maxMetadataBytes    = 1 << 20
	maxToolsBytes       = 16 << 20
	maxFeedsBytes       = 4 << 20
	maxServiceAuthBytes = 1 << 20
	maxServiceAuthFiles = 256
)

// DefaultCheckInterval is how often, at most, a cached agent's files are
// stat'ed to see whether they changed.
const DefaultCheckInterval = time.Second

// Store loads agents from <Root>/<agent-id>/ and caches them. Get is cheap on
// the hot path: a map lookup and, at most once per CheckInterval per agent, a
// handful of stat calls; files are re-read only when a stat changes. Store is
// safe for concurrent use.
type Store struct {
	root     string
	interval time.Duration
	now      func() time.Time
	onError  func(string, error)

	mu     sync.RWMutex
	agents map[string]*entry
	// missing remembers ids without a metadata.json until the next check
	// (unix nanos), so a flood of unknown ids costs map lookups, not
	// stat calls, and answers as fast as a known agent. It is bounded by
	// maxMissing and simply emptied when full.
	missing map[string]int64

	// listing is the set of agent directories under root, re-read at most
	// once per interval: an id that was never seen and is not listed is
	// refused without touching the disk, so a request naming an unknown
	// agent costs the same as one with a wrong secret (a map lookup), and
	// its timing does not tell which ids exist.
	listMu  sync.Mutex
	listing listing
}

// listing is one reading of root's directory names.
type listing struct {
	ids map[string]struct{}
	at  int64 // unix nanos; 0: never read
	// partial is set when root held more entries than maxListed; ids
	// not in ids are then looked up on disk as before.
	partial bool
}

const (
	maxMissing = 4096
	// maxListed bounds the directory names a listing keeps.
	maxListed = 100_000
)

// StoreOptions configures a Store. The zero value means defaults.
type StoreOptions struct {
	// CheckInterval bounds how often files are stat'ed per agent
	// (default DefaultCheckInterval; negative means on every Get, for tests).
	CheckInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnError, when set, is told about problems the client must not see:
	// an unreadable or malformed metadata.json (the request is refused as
	// an unknown agent) and a malformed service-auth file (skipped, so
	// that service gets no credential). The proxy logs these as audit
	// manifest_error events so the operator learns why.
	OnError func(agentID string, err error)
}

// NewStore returns a Store reading agents under root.
func NewStore(root string, opts StoreOptions) *Store {
	s := &Store{root: root, interval: opts.CheckInterval, now: opts.Now, onError: opts.OnError, agents: make(map[string]*entry), missing: make(map[string]int64)}
	if s.interval == 0 {
		s.interval = DefaultCheckInterval
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// entry is one cached agent: what its files gave, re-read when their
// fingerprint changes.
type entry struct {
	state filewatch.Value[loaded]
}

// loaded is the outcome of one load: an agent, or why its metadata.json is
// unusable. Broken agents are cached too, so a runner retrying against a
// broken manifest costs a map lookup, and the operator is told once per
// change rather than once per request.
type loaded struct {
	agent *Agent
	err   error
}

// Get returns the agent's current snapshot. It returns ErrUnknownAgent when
// the id is invalid or the agent has no metadata.json, and a descriptive
// error when metadata.json is unreadable or malformed. Malformed tools.json
// or feeds.json do not fail Get; they are reported in Agent.ToolsErr and
// Agent.FeedsErr so the caller can refuse the request loudly.
func (s *Store) Get(id string) (*Agent, error) {
	if !manifest.ValidAgentID(id) {
		return nil, ErrUnknownAgent
	}
	now := s.now()
	s.mu.RLock()
	e := s.agents[id]
	until, miss := s.missing[id]
	s.mu.RUnlock()
	if e == nil {
		if miss && now.UnixNano() < until {
			return nil, ErrUnknownAgent
		}
		if !s.listed(id, now) {
			return nil, ErrUnknownAgent
		}
		return s.first(id, now)
	}
	st := e.state.Get(now, s.interval,
		func() (string, error) { return s.fingerprint(id) },
		func() (*loaded, string) { return s.reload(id, e) })
	return st.agent, st.err
}

// listed reports whether root has a directory named id, as of a listing
// at most one interval old (re-read here when older, whatever the id, so
// the cost of a refresh says nothing about the id asked for).
func (s *Store) listed(id string, now time.Time) bool {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	if s.listing.at == 0 || s.interval < 0 || now.UnixNano()-s.listing.at >= int64(s.interval) {
		s.listing = readListing(s.root, now)
	}
	if _, ok := s.listing.ids[id]; ok {
		return true
	}
	return s.listing.partial
}

// readListing lists the directories under root; an unreadable root lists
// none (every agent is then unknown, as its files cannot be read).
func readListing(root string, now time.Time) listing {
	l := listing{ids: map[string]struct{}{}, at: now.UnixNano()}
	f, err := os.Open(root)
	if err != nil {
		return l
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(1024)
		for _, e := range ents {
			if len(l.ids) == maxListed {
				l.partial = true
				return l
			}
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				l.ids[e.Name()] = struct{}{}
			}
		}
		if err != nil {
			return l
		}
	}
}

// first loads an agent not in the cache. Ids without a metadata.json are
// not cached: the map only holds agents that exist on disk, so random ids
// cannot grow it.
func (s *Store) first(id string, now time.Time) (*Agent, error) {
	a, stamp, err := s.load(id)
	if errors.Is(err, ErrUnknownAgent) {
		if s.interval > 0 {
			s.mu.Lock()
			if len(s.missing) >= maxMissing {
				clear(s.missing)
			}
			s.missing[id] = now.UnixNano() + int64(s.interval)
			s.mu.Unlock()
		}
		return nil, err
	}
	e := &entry{}
	e.state.Set(&loaded{a, err}, stamp, now)
	s.mu.Lock()
	delete(s.missing, id)
	if prev := s.agents[id]; prev != nil {
		e = prev // another request loaded it first; keep one entry
	} else {
		s.agents[id] = e
	}
	s.mu.Unlock()
	st := e.state.Load()
	return st.agent, st.err
}

// reload re-reads a cached agent whose files changed.
func (s *Store) reload(id string, e *entry) (*loaded, string) {
	a, stamp, err := s.load(id)
	if errors.Is(err, ErrUnknownAgent) {
		// The agent is gone: forget it, and fail this request.
		s.mu.Lock()
		if s.agents[id] == e {
			delete(s.agents, id)
		}
		s.mu.Unlock()
	}
	return &loaded{a, err}, stamp
}

func (s *Store) dir(id string) string { return filepath.Join(s.root, id) }

// resolve returns the directory an agent's files are read from: claw
// applies a compile by switching <root>/<id>, a symbolic link, to a new
// complete copy of the agent's files, so one load resolves the link once
// and reads every file from that copy, never some files from the old
// copy and some from the new. Without a link (or an agent) it is the
// plain directory.
func (s *Store) resolve(id string) string {
	dir := s.dir(id)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}

// fingerprint summarises size and mtime of every file an agent is read from.
func (s *Store) fingerprint(id string) (string, error) {
	return fingerprintAt(s.resolve(id))
}

// fingerprintAt fingerprints the agent files in dir, the resolved
// directory: a switch to another copy changes it even when the copies'
// files agree in size and modification time.
func fingerprintAt(dir string) (string, error) {
	names, err := serviceAuthNames(dir)
	if err != nil {
		return "", err
	}
	paths := make([]string, 0, 3+len(names))
	for _, name := range []string{"metadata.json", "tools.json", "feeds.json"} {
		paths = append(paths, filepath.Join(dir, name))
	}
	for _, n := range names {
		paths = append(paths, filepath.Join(dir, "service-auth", n))
	}
	return dir + "|" + filewatch.Stamp(paths...), nil
}

func serviceAuthNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(dir, "service-auth"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "service-auth"), err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	if len(names) > maxServiceAuthFiles {
		return nil, fmt.Errorf("%s: %d files exceed the limit of %d", filepath.Join(dir, "service-auth"), len(names), maxServiceAuthFiles)
	}
	sort.Strings(names)
	return names, nil
}

// load reads every file of the agent. The fingerprint is taken before the
// reads, so a change racing with the load is seen by the next check.
func (s *Store) load(id string) (*Agent, string, error) {
	dir := s.resolve(id)
	stamp, err := fingerprintAt(dir)
	if err != nil {
		s.report(id, err)
		return nil, stamp, err
	}
	raw, err := readCapped(filepath.Join(dir, "metadata.json"), maxMetadataBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, stamp, ErrUnknownAgent
	}
	if err != nil {
		s.report(id, err)
		return nil, stamp, err
	}
	md, err := manifest.ParseMetadata(raw, id)
	if err != nil {
		err = fmt.Errorf("%s: %w", dir, err)
		s.report(id, err)
		return nil, stamp, err
	}
	a := &Agent{ID: id, Metadata: *md}

	if raw, err := readCapped(filepath.Join(dir, "tools.json"), maxToolsBytes); err == nil {
		var t *manifest.Tools
		t, a.ToolsErr = manifest.ParseTools(raw)
		a.SetTools(t)
	} else if !errors.Is(err, fs.ErrNotExist) {
		a.ToolsErr = err
	}
	if raw, err := readCapped(filepath.Join(dir, "feeds.json"), maxFeedsBytes); err == nil {
		a.Feeds, a.FeedsErr = manifest.ParseFeeds(raw)
	} else if !errors.Is(err, fs.ErrNotExist) {
		a.FeedsErr = err
	}

	names, err := serviceAuthNames(dir)
	if err != nil {
		s.report(id, err)
		return nil, stamp, err
	}
	for _, n := range names {
		svc := strings.TrimSuffix(n, ".json")
		raw, err := readCapped(filepath.Join(dir, "service-auth", n), maxServiceAuthBytes)
		if err != nil {
			s.report(id, fmt.Errorf("%w (file skipped)", err))
			continue
		}
		sa, err := manifest.ParseServiceAuth(raw, svc)
		if err != nil {
			s.report(id, fmt.Errorf("%s: %w (file skipped)", dir, err))
			continue
		}
		if a.ServiceAuth == nil {
			a.ServiceAuth = make(map[string]*manifest.ServiceAuth, len(names))
		}
		a.ServiceAuth[svc] = sa
	}
	return a, stamp, nil
}

// readCapped reads a whole file, failing when it is larger than limit.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than the %d-byte limit", path, limit)
	}
	return b, nil
}

func (s *Store) report(id string, err error) {
	if s.onError != nil {
		s.onError(id, err)
	}
}
