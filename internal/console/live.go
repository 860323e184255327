package console

import (
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/histindex"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/recorder"
)

// Window is what the live counters count over.
const Window = 5 * time.Minute

const (
	slot  = 10 * time.Second
	slots = int(Window / slot)
	// maxLive bounds the agents and feeds tracked live.
	maxLive = 10_000
)

// Live is a recorder.Sink keeping what the pages show live: each agent's
// requests and errors over the last Window and its last activity, each
// feed's last fetch. It keeps nothing of an exchange's content.
type Live struct {
	now func() time.Time

	mu      sync.Mutex
	agents  map[string]*liveAgent
	feeds   map[feedKey]*FeedState
	version uint64
	changed chan struct{} // closed and replaced on every change
	kick    chan struct{} // a history entry was written
}

var _ recorder.Sink = (*Live)(nil)

type liveAgent struct {
	reqs, errs [slots]int
	at         [slots]int64 // the slot's start, unix seconds / slot
	last       time.Time
}

type feedKey struct{ agent, feed string }

// FeedState is a feed's last fetch as the decorator reported it.
type FeedState struct {
	Agent, Feed string
	At          time.Time
	Status      string // "ok", "error"
	Cached      bool
	Stale       bool
	Bytes       int
	LastOK      time.Time
}

// NewLive returns an empty Live (now: nil for time.Now).
func NewLive(now func() time.Time) *Live {
	if now == nil {
		now = time.Now
	}
	return &Live{now: now, agents: map[string]*liveAgent{}, feeds: map[feedKey]*FeedState{},
		changed: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// Event implements recorder.Sink.
func (l *Live) Event(e *audit.Event) {
	switch {
	case e.Type == audit.TypeFeedFetch:
		l.feed(e)
	case e.Type == audit.TypeResponse, e.Type == audit.TypeError && e.StatusCode != 0 && e.ErrorType != audit.ErrorTypeRetry:
		failed := e.Type == audit.TypeError || e.StatusCode < 200 || e.StatusCode > 299
		l.request(e.ClawID, e.TS, failed)
	case e.Type == audit.TypeToolCall && e.Mode == "native":
		l.touch(e.ClawID, e.TS)
	}
}

// Entry implements recorder.Sink: the index reads the new line soon.
func (l *Live) Entry(*history.Entry) {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *Live) agent(id string) *liveAgent {
	if id == "" {
		id = "unknown"
	}
	a := l.agents[id]
	if a == nil && len(l.agents) < maxLive {
		a = &liveAgent{}
		l.agents[id] = a
	}
	return a
}

func (l *Live) request(id string, ts time.Time, failed bool) {
	if ts.IsZero() {
		ts = l.now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.agent(id)
	if a == nil {
		return
	}
	k := ts.Unix() / int64(slot/time.Second)
	i := int(k % int64(slots))
	if a.at[i] != k {
		a.at[i], a.reqs[i], a.errs[i] = k, 0, 0
	}
	a.reqs[i]++
	if failed {
		a.errs[i]++
	}
	if ts.After(a.last) {
		a.last = ts
	}
	l.changeLocked()
}

// Seed adds exchanges counted elsewhere (the history of the last Window,
// as cllama starts) to the counters: requests and errors per agent and
// slot. Slots out of the window now are left out.
func (l *Live) Seed(counts []histindex.SlotCount) {
	now := l.now().Unix() / int64(slot/time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range counts {
		k := c.Start.Unix() / int64(slot/time.Second)
		if k > now || now-k >= int64(slots) || c.Requests <= 0 {
			continue
		}
		a := l.agent(c.Agent)
		if a == nil {
			continue
		}
		i := int(k % int64(slots))
		switch {
		case a.at[i] > k:
			continue // the slot holds a later time already
		case a.at[i] < k:
			a.at[i], a.reqs[i], a.errs[i] = k, 0, 0
		}
		a.reqs[i] += c.Requests
		a.errs[i] += min(c.Errors, c.Requests)
		if c.Last.After(a.last) {
			a.last = c.Last
		}
	}
	l.changeLocked()
}

func (l *Live) touch(id string, ts time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.agent(id); a != nil && ts.After(a.last) {
		a.last = ts
		l.changeLocked()
	}
}

func (l *Live) feed(e *audit.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := feedKey{e.ClawID, e.Feed}
	f := l.feeds[k]
	if f == nil {
		if len(l.feeds) >= maxLive {
			return
		}
		f = &FeedState{Agent: e.ClawID, Feed: e.Feed}
		l.feeds[k] = f
	}
	f.At, f.Status, f.Cached, f.Stale = e.TS, e.Status, e.Cached, e.Stale
	f.Bytes = 0
	if e.Bytes != nil {
		f.Bytes = *e.Bytes
	}
	if e.Status == "ok" && !e.Cached && !e.Stale {
		f.LastOK = e.TS
	}
	l.changeLocked()
}

func (l *Live) changeLocked() {
	l.version++
	close(l.changed)
	l.changed = make(chan struct{})
}

// AgentLive is an agent's live counters.
type AgentLive struct {
	Requests int       `json:"requests"`
	Errors   int       `json:"errors"`
	Last     time.Time `json:"last"`
}

// Snapshot returns every agent's counters over the last Window, the
// version they were taken at, and a channel closed at the next change.
func (l *Live) Snapshot() (map[string]AgentLive, uint64, <-chan struct{}) {
	now := l.now().Unix() / int64(slot/time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]AgentLive, len(l.agents))
	for id, a := range l.agents {
		var s AgentLive
		for i := range slots {
			if now-a.at[i] < int64(slots) && a.at[i] <= now {
				s.Requests += a.reqs[i]
				s.Errors += a.errs[i]
			}
		}
		s.Last = a.last
		out[id] = s
	}
	return out, l.version, l.changed
}

// Feeds returns the feeds' last fetches.
func (l *Live) Feeds() []FeedState {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]FeedState, 0, len(l.feeds))
	for _, f := range l.feeds {
		out = append(out, *f)
	}
	return out
}
