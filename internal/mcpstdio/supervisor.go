package mcpstdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Status values reported by /healthz.
const (
	StatusStarting   = "starting"   // child launched, MCP initialize not done yet
	StatusUp         = "up"         // serving
	StatusRestarting = "restarting" // waiting out the backoff after a failure
	StatusStopped    = "stopped"    // shut down
)

// Health is the JSON body of GET /healthz.
type Health struct {
	Status          string     `json:"status"`
	Command         string     `json:"command"`
	PID             int        `json:"pid,omitempty"`
	UpSince         *time.Time `json:"up_since,omitempty"`
	Restarts        int        `json:"restarts"`
	Tools           int        `json:"tools"`
	Server          string     `json:"server,omitempty"`
	ProtocolVersion string     `json:"protocol_version,omitempty"`
	LastExit        string     `json:"last_exit,omitempty"`
	LastError       string     `json:"last_error,omitempty"`
	NextRestart     *time.Time `json:"next_restart,omitempty"`
	InFlight        int64      `json:"in_flight"`
}

// generation is one successful connection to one child process.
type generation struct {
	sess   *mcp.ClientSession
	done   chan struct{} // closed when this generation went down
	reason string        // why; set before done is closed
}

// supervisor runs the child, restarts it, and hands the current session to
// forwarded calls.
type supervisor struct {
	cfg    Config
	logger *slog.Logger
	client *mcp.Client
	mirror *mirror
	resync chan struct{} // a list_changed notification arrived

	inflight atomic.Int64

	mu     sync.Mutex
	cur    *generation   // nil while down
	ready  chan struct{} // closed while up; replaced when down
	health Health
	synced chan struct{} // closed after the first successful listing
	once   sync.Once
}

func newSupervisor(cfg Config, logger *slog.Logger) *supervisor {
	s := &supervisor{
		cfg: cfg, logger: logger,
		resync: make(chan struct{}, 1),
		ready:  make(chan struct{}),
		synced: make(chan struct{}),
		health: Health{Status: StatusStarting, Command: cfg.Command},
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "claw-mcp-stdio", Version: "0.1.0"}, &mcp.ClientOptions{
		Logger: logger,
		// Coalesce: one pending resync covers any number of notifications.
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { s.poke() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { s.poke() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { s.poke() },
		// No roots: the wrapper has nothing to offer there.
		Capabilities: &mcp.ClientCapabilities{},
	})
	return s
}

func (s *supervisor) poke() {
	select {
	case s.resync <- struct{}{}:
	default:
	}
}

// run starts the child and keeps it running until ctx ends.
func (s *supervisor) run(ctx context.Context) {
	delay := s.cfg.BackoffInitial
	for {
		upFor, err := s.runOnce(ctx)
		if ctx.Err() != nil {
			s.update(func(h *Health) { h.Status = StatusStopped; h.PID = 0; h.NextRestart = nil })
			return
		}
		if upFor >= s.cfg.StableAfter {
			delay = s.cfg.BackoffInitial
		}
		next := time.Now().Add(delay)
		s.update(func(h *Health) {
			h.Status = StatusRestarting
			h.PID = 0
			h.LastError = err.Error()
			h.NextRestart = &next
		})
		s.logger.Warn("stdio MCP server down; restarting", "err", err, "in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			s.update(func(h *Health) { h.Status = StatusStopped; h.NextRestart = nil })
			return
		case <-t.C:
		}
		delay = min(delay*2, s.cfg.BackoffMax)
		s.update(func(h *Health) { h.Restarts++; h.NextRestart = nil })
	}
}

// runOnce runs one child until it fails or ctx ends. It returns how long
// the child served and why it stopped.
func (s *supervisor) runOnce(ctx context.Context) (time.Duration, error) {
	s.update(func(h *Health) { h.Status = StatusStarting; h.PID = 0 })
	ch, err := startChild(ctx, s.cfg, s.logger)
	if err != nil {
		return 0, err
	}
	s.update(func(h *Health) { h.PID = ch.pid() })
	s.logger.Info("started stdio MCP server", "pid", ch.pid(), "command", s.cfg.Command, "args", s.cfg.Args)

	sess, ntools, err := s.connect(ctx, ch)
	if err != nil {
		ch.stop(s.cfg.StopGrace)
		if isDone(ch.exited) {
			err = fmt.Errorf("%w (child %s)", err, ch.exitReason())
		}
		s.update(func(h *Health) { h.LastExit = exitOrEmpty(ch) })
		return 0, err
	}

	gen := &generation{sess: sess, done: make(chan struct{})}
	upAt := time.Now()
	s.setUp(gen, sess, ntools, upAt)
	s.once.Do(func() { close(s.synced) })

	sessDone := make(chan error, 1)
	go func() { sessDone <- sess.Wait() }()
	var reason error
	for reason == nil {
		select {
		case <-ch.exited:
			// When the child broke the protocol, the SDK closes its stdin
			// and it exits; both events race here, and the protocol
			// failure is the cause worth reporting.
			t := time.NewTimer(200 * time.Millisecond)
			select {
			case err := <-sessDone:
				if isProtocolError(err) {
					reason = fmt.Errorf("protocol failure on the child's stdout: %v", err)
				}
			case <-t.C:
			}
			t.Stop()
			if reason == nil {
				reason = fmt.Errorf("child %s", ch.exitReason())
			}
		case err := <-sessDone:
			// A decode error means the child wrote something that is not
			// JSON-RPC. A clean end means stdout closed: normally the
			// child exiting, reaped a moment later.
			switch {
			case isProtocolError(err):
				reason = fmt.Errorf("protocol failure on the child's stdout: %v", err)
			case ch.waitExit(200 * time.Millisecond):
				reason = fmt.Errorf("child %s", ch.exitReason())
			default:
				reason = errors.New("protocol failure: the child closed its stdout")
			}
		case <-ctx.Done():
			reason = context.Cause(ctx)
		case <-s.resync:
			s.resyncLists(ctx, sess)
		}
	}
	s.setDown(gen, reason.Error())
	ch.stop(s.cfg.StopGrace)
	sess.Close()
	s.update(func(h *Health) { h.LastExit = exitOrEmpty(ch) })
	s.logger.Info("stdio MCP server stopped", "pid", ch.pid(), "reason", reason, "exit", exitOrEmpty(ch))
	return time.Since(upAt), reason
}

// connect performs MCP initialize and the first listing, bounded by
// InitTimeout and abandoned as soon as the child exits.
func (s *supervisor) connect(ctx context.Context, ch *child) (*mcp.ClientSession, int, error) {
	ictx, cancel := context.WithTimeout(ctx, s.cfg.InitTimeout)
	defer cancel()
	go func() {
		select {
		case <-ch.exited:
			cancel()
		case <-ictx.Done():
		}
	}()
	sess, err := s.client.Connect(ictx, &mcp.IOTransport{Reader: ch.stdout, Writer: ch.stdin}, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("MCP initialize: %w", err)
	}
	n, err := s.mirror.sync(ictx, sess)
	if err != nil {
		sess.Close()
		return nil, 0, err
	}
	return sess, n, nil
}

func (s *supervisor) resyncLists(ctx context.Context, sess *mcp.ClientSession) {
	lctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	n, err := s.mirror.sync(lctx, sess)
	if err != nil {
		s.logger.Warn("refreshing lists after list_changed failed", "err", err)
		return
	}
	s.update(func(h *Health) { h.Tools = n })
	s.logger.Info("refreshed lists after list_changed", "tools", n)
}

func (s *supervisor) setUp(gen *generation, sess *mcp.ClientSession, ntools int, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = gen
	close(s.ready)
	s.health.Status = StatusUp
	s.health.UpSince = &at
	s.health.Tools = ntools
	s.health.LastError = ""
	if ir := sess.InitializeResult(); ir != nil {
		s.health.ProtocolVersion = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			s.health.Server = ir.ServerInfo.Name + " " + ir.ServerInfo.Version
		}
	}
	s.logger.Info("stdio MCP server ready", "pid", s.health.PID, "server", s.health.Server, "protocol", s.health.ProtocolVersion, "tools", ntools)
}

func (s *supervisor) setDown(gen *generation, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen.reason = reason
	close(gen.done)
	if s.cur == gen {
		s.cur = nil
		s.ready = make(chan struct{})
	}
	s.health.UpSince = nil
	s.health.LastError = reason
}

func (s *supervisor) update(f func(*Health)) {
	s.mu.Lock()
	f(&s.health)
	s.mu.Unlock()
}

func (s *supervisor) snapshot() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.health
	h.InFlight = s.inflight.Load()
	return h
}

// acquire returns the current generation, waiting up to StartWait (and no
// longer than ctx) for a child that is starting or restarting.
func (s *supervisor) acquire(ctx context.Context) (*generation, error) {
	s.mu.Lock()
	cur, ready, status := s.cur, s.ready, s.health.Status
	s.mu.Unlock()
	if cur != nil {
		return cur, nil
	}
	if status == StatusStopped {
		return nil, unavailable("the wrapper is shutting down")
	}
	t := time.NewTimer(s.cfg.StartWait)
	defer t.Stop()
	select {
	case <-ready:
		s.mu.Lock()
		cur = s.cur
		s.mu.Unlock()
		if cur != nil {
			return cur, nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	h := s.snapshot()
	return nil, unavailable("child is %s (last error: %s)", h.Status, h.LastError)
}

// forward runs fn against the current child with the per-call timeout and
// maps failures to clear JSON-RPC errors (errors.go). It never waits longer
// than StartWait + CallTimeout.
func (s *supervisor) forward(ctx context.Context, fn func(context.Context, *mcp.ClientSession) error) error {
	gen, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	err = fn(cctx, gen.sess)
	return mapCallError(ctx, cctx, err, s.cfg.CallTimeout, func() (string, bool) {
		// The connection usually breaks a moment before the process is
		// reaped; give the supervisor that moment to record why.
		t := time.NewTimer(500 * time.Millisecond)
		defer t.Stop()
		select {
		case <-gen.done:
			return gen.reason, true
		case <-t.C:
			return "", false
		}
	})
}

// isProtocolError reports whether a session ended on something other than
// end of file: in practice, bytes on stdout that are not JSON-RPC.
func isProtocolError(err error) bool {
	return err != nil && !errors.Is(err, io.EOF)
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func exitOrEmpty(c *child) string {
	if isDone(c.exited) {
		return c.exitReason()
	}
	return ""
}
