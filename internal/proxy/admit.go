package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// Every agent of a pod shares one cllama, so one agent must not be able to
// take its memory or its connections from the others. Every route an agent
// calls (the model endpoints, /mcp, the model list, the routes on stored
// objects) goes through the same bounds:
//
//   - MaxAgentConcurrency: the requests of one agent in progress at once.
//     One more waits for a slot of its agent's, in order of arrival, at
//     most QueueWait and behind at most MaxQueuedPerAgent others (agents
//     fan out: sub-agents, batch jobs); past either it is answered 429
//     with Retry-After. An agent's queue never delays another agent:
//     each has slots of its own, handed on from request to request of
//     the same agent.
//   - MaxInflightBytes: the request bodies held by requests in progress,
//     all agents together (a body stays in memory until its exchange
//     ends). A body that would pass it is answered 503 with Retry-After.
//   - MaxAgentInflightBytes: the share of that budget one agent's bodies
//     may hold; past it is a 429 with Retry-After, and the rest of the
//     budget stays for the other agents.
//
// A body holds the budget by what has arrived, not by what it declares:
// as it is read, it takes the budget in steps (readBody), so a runner
// that declares large bodies and sends them slowly holds little. Its read
// is bounded in time by BodyReadTimeout.
//
// The answers are in the endpoint's format and are audit error events.

// admission counts what requests in progress hold. It is safe for
// concurrent use.
type admission struct {
	maxBytes      int64
	maxAgentBytes int64
	perAgent      int
	// queueLen and queueWait bound the requests waiting for a slot.
	queueLen  int
	queueWait time.Duration

	mu     sync.Mutex
	bytes  int64
	agents map[string]agentLoad
	// queues holds, per agent, the requests waiting for one of its slots
	// in order of arrival; a slot given back goes to the first (its
	// channel closed), not back to the pool.
	queues map[string][]chan struct{}

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

// FreeHeap returns the heap that is garbage to the OS. It collects twice:
// the first collection only moves what sync.Pools hold (the server's
// connection buffers, body and encoding buffers) aside, where it stays
// reachable until the next; the second frees it, and FreeOSMemory then
// gives the pages back. After traffic the pools held about two thirds of
// the live heap, so one collection left most of it resident.
func FreeHeap() {
	runtime.GC()
	debug.FreeOSMemory()
}

// agentLoad is what one agent's requests in progress hold.
type agentLoad struct {
	requests int
	bytes    int64
}

func newAdmission(maxBytes, maxAgentBytes int64, perAgent, queueLen int, queueWait time.Duration) *admission {
	return &admission{maxBytes: maxBytes, maxAgentBytes: maxAgentBytes, perAgent: perAgent, queueLen: queueLen, queueWait: queueWait,
		agents: map[string]agentLoad{}, queues: map[string][]chan struct{}{},
		trim: FreeHeap, now: time.Now, idleAfter: trimEvery}
}

// set records what agent holds, forgetting an agent that holds nothing;
// the caller holds a.mu.
func (a *admission) set(agent string, l agentLoad) {
	if l.requests <= 0 && l.bytes <= 0 {
		delete(a.agents, agent)
		return
	}
	a.agents[agent] = l
}

// enter takes one of the agent's request slots, waiting for one (in
// order of arrival, at most queueWait, behind at most queueLen others)
// when all are taken. false: none came in time, the queue is full, or ctx
// ended first.
func (a *admission) enter(ctx context.Context, agent string) bool {
	a.mu.Lock()
	l := a.agents[agent]
	if l.requests < a.perAgent {
		l.requests++
		a.set(agent, l)
		a.inProgress++
		a.served = true
		if a.idleTimer != nil {
			a.idleTimer.Stop()
		}
		a.mu.Unlock()
		return true
	}
	q := a.queues[agent]
	if len(q) >= a.queueLen || a.queueWait <= 0 {
		a.mu.Unlock()
		return false
	}
	handed := make(chan struct{})
	a.queues[agent] = append(q, handed)
	a.mu.Unlock()
	t := time.NewTimer(a.queueWait)
	defer t.Stop()
	select {
	case <-handed:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case <-handed: // a slot was handed over as the wait ended: it is ours
		return true
	default:
	}
	q = a.queues[agent]
	for i, c := range q {
		if c == handed {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(a.queues, agent)
	} else {
		a.queues[agent] = q
	}
	return false
}

// leave gives an agent's slot back; the last request in progress starts
// the idle wait.
func (a *admission) leave(agent string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if q := a.queues[agent]; len(q) > 0 {
		// The slot goes on to the agent's first waiting request.
		if len(q) == 1 {
			delete(a.queues, agent)
		} else {
			a.queues[agent] = q[1:]
		}
		close(q[0])
		return
	}
	l := a.agents[agent]
	l.requests--
	a.set(agent, l)
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

// reserve takes n bytes of the body budget for agent: errOverBudget when
// all bodies together would hold more than the budget, errAgentOverBudget
// when the agent's would hold more than its share.
func (a *admission) reserve(agent string, n int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.agents[agent]
	switch {
	case a.bytes+n > a.maxBytes:
		return errOverBudget
	case l.bytes+n > a.maxAgentBytes:
		return errAgentOverBudget
	}
	l.bytes += n
	a.set(agent, l)
	a.bytes += n
	a.peak = max(a.peak, a.bytes)
	return nil
}

// release gives n bytes of agent's back, and schedules a trim when a
// spike drained.
func (a *admission) release(agent string, n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.agents[agent]
	l.bytes -= n
	a.set(agent, l)
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

// errOverBudget and errAgentOverBudget are returned while reading a body
// the budget, or the agent's share of it, cannot hold.
var (
	errOverBudget      = errors.New("in-flight body budget exhausted")
	errAgentOverBudget = errors.New("the agent's share of the in-flight body budget exhausted")
)

// bodyLease is the budget one body holds.
type bodyLease struct {
	a     *admission
	agent string
	n     int64
}

// grow takes n more bytes.
func (l *bodyLease) grow(n int64) error {
	if err := l.a.reserve(l.agent, n); err != nil {
		return err
	}
	l.n += n
	return nil
}

// end gives the budget back.
func (l *bodyLease) end() {
	if l.n != 0 {
		l.a.release(l.agent, l.n)
		l.n = 0
	}
}

// overBudget is the answer to a body the budget could not hold.
func (s *Server) overBudget(agent string, err error) *apierror.Error {
	if errors.Is(err, errAgentOverBudget) {
		return retrySoon(apierror.New(http.StatusTooManyRequests, apierror.TypeRateLimit,
			fmt.Sprintf("agent %s already holds as many request bodies in progress as one agent may (%d bytes, CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT); retry when one finishes", agent, s.cfg.MaxAgentInflightBytes)))
	}
	return retrySoon(apierror.New(http.StatusServiceUnavailable, apierror.TypeOverloaded,
		fmt.Sprintf("cllama is holding as many request bodies as it may (%d bytes in flight, CLLAMA_MAX_INFLIGHT_BYTES); retry shortly", s.cfg.MaxInflightBytes)))
}

func (s *Server) agentBusy(agent string) *apierror.Error {
	return retrySoon(apierror.New(http.StatusTooManyRequests, apierror.TypeRateLimit,
		fmt.Sprintf("agent %s already has %d requests in progress, the most one agent may have (CLLAMA_MAX_CONCURRENT_PER_AGENT), and this one found no slot within %s behind at most %d others (CLLAMA_QUEUE_WAIT, CLLAMA_MAX_QUEUED_PER_AGENT); retry when one finishes",
			agent, s.cfg.MaxAgentConcurrency, s.cfg.QueueWait, s.cfg.MaxQueuedPerAgent)))
}
