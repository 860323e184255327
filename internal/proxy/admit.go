package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// Every agent of a pod shares one cllama, so one agent must not be able to
// take its memory or its connections from the others. Two bounds, checked
// before a request's body is read:
//
//   - MaxInflightBytes: the request bodies held by requests in progress,
//     all agents together (a body stays in memory until its exchange
//     ends). A request that would pass it is answered 503 with
//     Retry-After instead of being read.
//   - MaxAgentConcurrency: the requests of one agent in progress at once;
//     one more is answered 429 with Retry-After.
//
// Both answers are in the endpoint's format and are audit error events.

// admission counts what requests in progress hold. It is safe for
// concurrent use.
type admission struct {
	maxBytes int64
	perAgent int

	mu     sync.Mutex
	bytes  int64
	agents map[string]int

	// After a spike of large bodies the Go runtime keeps the memory they
	// took until a collection, which an idle proxy may not run for
	// minutes. peak is the most held since the last trim; when a spike of
	// at least spikeBytes has drained (below an eighth of it), trim
	// returns the memory to the OS, at most once per trimEvery.
	peak      int64
	lastTrim  time.Time
	trimTimer *time.Timer
	trim      func()
	now       func() time.Time

	// The same holds after any traffic: the heap requests used stays
	// with the process. Once no request has been in progress for
	// idleAfter, and some were served since the last trim, trim runs
	// once (at most once per trimEvery, like the spike's).
	inProgress int
	served     bool
	idleAfter  time.Duration
	idleTimer  *time.Timer
	// idle, when set, runs after that trim (Options.Idle).
	idle func()
}

const (
	spikeBytes = 64 << 20
	trimEvery  = 10 * time.Second
)

func newAdmission(maxBytes int64, perAgent int) *admission {
	return &admission{maxBytes: maxBytes, perAgent: perAgent, agents: map[string]int{},
		trim: debug.FreeOSMemory, now: time.Now, idleAfter: trimEvery}
}

// enter takes one of the agent's request slots.
func (a *admission) enter(agent string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.agents[agent] >= a.perAgent {
		return false
	}
	a.agents[agent]++
	a.inProgress++
	a.served = true
	if a.idleTimer != nil {
		a.idleTimer.Stop()
	}
	return true
}

// leave gives an agent's slot back; the last request in progress starts
// the idle wait.
func (a *admission) leave(agent string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.agents[agent]--; a.agents[agent] <= 0 {
		delete(a.agents, agent)
	}
	if a.inProgress--; a.inProgress == 0 {
		if a.idleTimer == nil {
			a.idleTimer = time.AfterFunc(a.idleAfter, a.trimIdle)
		} else {
			a.idleTimer.Reset(a.idleAfter)
		}
	}
}

// close stops the trims still to come.
func (a *admission) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.served = false // an idle wait that fires anyway trims nothing
	if a.idleTimer != nil {
		a.idleTimer.Stop()
	}
	if a.trimTimer != nil {
		a.trimTimer.Stop()
	}
}

// trimIdle trims once traffic has stopped (see idleAfter).
func (a *admission) trimIdle() {
	a.mu.Lock()
	if a.inProgress > 0 || !a.served {
		a.mu.Unlock()
		return
	}
	if wait := trimEvery - a.now().Sub(a.lastTrim); wait > 0 {
		a.idleTimer.Reset(wait)
		a.mu.Unlock()
		return
	}
	a.served, a.peak, a.lastTrim = false, a.bytes, a.now()
	a.mu.Unlock()
	a.trim()
	if a.idle != nil {
		a.idle()
	}
}

// reserve takes n bytes of the body budget.
func (a *admission) reserve(n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bytes+n > a.maxBytes {
		return false
	}
	a.bytes += n
	a.peak = max(a.peak, a.bytes)
	return true
}

// release gives n bytes back, and schedules a trim when a spike drained.
func (a *admission) release(n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.bytes -= n
	if a.peak < spikeBytes || a.bytes > a.peak/8 || a.trimTimer != nil {
		return
	}
	wait := max(trimEvery-a.now().Sub(a.lastTrim), 0)
	a.trimTimer = time.AfterFunc(wait, func() {
		a.mu.Lock()
		a.peak, a.lastTrim, a.trimTimer = a.bytes, a.now(), nil
		a.mu.Unlock()
		a.trim()
	})
}

// inFlight is the bytes held now.
func (a *admission) inFlight() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bytes
}

// errOverBudget is returned while reading a body the budget cannot hold.
var errOverBudget = errors.New("in-flight body budget exhausted")

// budgetStep is how much of the budget a body of unknown length takes at a
// time while it is read.
const budgetStep = 1 << 20

// budgetReader reads a body of unknown length, taking budget a step ahead
// of what it has read.
type budgetReader struct {
	r io.Reader
	a *admission
	// limit is the most the body may be (the reader after it fails
	// past it): no step is taken beyond it.
	limit    int64
	read     int64
	reserved int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if len(p) > 0 && b.read == b.reserved {
		step := min(budgetStep, max(b.limit-b.reserved, 1))
		if !b.a.reserve(step) {
			return 0, errOverBudget
		}
		b.reserved += step
	}
	n, err := b.r.Read(p[:min(int64(len(p)), b.reserved-b.read)])
	b.read += int64(n)
	return n, err
}

func (s *Server) tooBusy() *statusError {
	return retrySoon(errStatus(http.StatusServiceUnavailable, apierror.TypeOverloaded,
		fmt.Sprintf("cllama is holding as many request bodies as it may (%d bytes in flight, CLLAMA_MAX_INFLIGHT_BYTES); retry shortly", s.cfg.MaxInflightBytes)))
}

func (s *Server) agentBusy(agent string) *statusError {
	return retrySoon(errStatus(http.StatusTooManyRequests, apierror.TypeRateLimit,
		fmt.Sprintf("agent %s already has %d requests in progress, the most one agent may have (CLLAMA_MAX_CONCURRENT_PER_AGENT); retry when one finishes", agent, s.cfg.MaxAgentConcurrency)))
}
