package discover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/capability"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

// Modes of running the wrapper.
const (
	// ModeContainer runs the wrapper in a short-lived container from the
	// service's image, with its environment and volumes.
	ModeContainer = "container"
	// ModeLocal runs claw-mcp-stdio and the command on the host.
	ModeLocal = "local"
)

// Options configure Discover. The zero value runs a container with the
// docker CLI, waits up to DefaultTimeout and stamps time.Now.
type Options struct {
	// Mode is ModeContainer (default) or ModeLocal.
	Mode string
	// Docker is the docker executable (container mode); default "docker".
	Docker string
	// Pull is docker run's --pull policy ("missing", "never", "always").
	// Default "never": like compile, discovery uses local images only
	// unless asked to pull.
	Pull string
	// Wrapper is the claw-mcp-stdio executable (local mode); default: next
	// to the running executable, else on PATH.
	Wrapper string
	// Timeout bounds one service: start, health, initialize, tools/list.
	// Default DefaultTimeout (commands such as `npx -y` download first).
	Timeout time.Duration
	// Log, when set, receives the wrapper's (or container's) output as it
	// comes; it is always kept (bounded) for error messages.
	Log io.Writer
	// Now stamps discovered_at; default time.Now.
	Now func() time.Time
	// ClientVersion is reported in MCP initialize; default "dev".
	ClientVersion string
}

// DefaultTimeout bounds one service's discovery.
const DefaultTimeout = 2 * time.Minute

// stopTimeout bounds stopping the wrapper after discovery.
const stopTimeout = 30 * time.Second

// Result is one service's snapshot.
type Result struct {
	Service  string
	Snapshot *Snapshot
	// Data is the rendered descriptor, ready for Write.
	Data []byte
	// Skipped says which listed tools were left out of the snapshot and
	// why (a name or schema no descriptor may hold), one line each.
	Skipped []string
}

// Discover starts the wrapper for t, lists its tools and stops it again —
// also when listing fails or ctx is cancelled.
func Discover(ctx context.Context, t Target, o Options) (res *Result, err error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.Mode == "" {
		o.Mode = ModeContainer
	}
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("discovery of %q took longer than %s", t.Service, o.Timeout))
	defer cancel()
	logs := &tail{max: 8 << 10, tee: o.Log}
	var r *running
	switch o.Mode {
	case ModeContainer:
		r, err = startContainer(ctx, t, o, logs)
	case ModeLocal:
		r, err = startLocal(ctx, t, o, logs)
	default:
		return nil, fmt.Errorf("unknown discovery mode %q (use %q or %q)", o.Mode, ModeContainer, ModeLocal)
	}
	if err != nil {
		return nil, withLogs(err, logs)
	}
	defer func() {
		if serr := r.stop(); serr != nil && err == nil {
			err = fmt.Errorf("stopping the wrapper of %q: %w", t.Service, serr)
		}
	}()
	health, err := waitHealthy(ctx, r)
	if err != nil {
		return nil, withLogs(err, logs)
	}
	l, err := listTools(ctx, r.base+t.Path, t.AuthToken, o.ClientVersion)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		return nil, withLogs(err, logs)
	}
	sort.Slice(l.Tools, func(i, j int) bool { return l.Tools[i].Name < l.Tools[j].Name })
	usable, skipped := usableTools(t.Path, l.Tools)
	s := &Snapshot{
		Version: 2,
		MCP:     SnapshotMCP{Transport: capability.TransportStreamableHTTP, Path: t.Path},
		Tools:   usable,
		Discovery: DiscoveryMeta{
			Service: t.Service, Command: t.Command, Args: t.Args, Image: t.Image, Mode: o.Mode,
			ProtocolVersion: l.ProtocolVersion, Server: l.Server, WrappedServer: health.Server,
			DiscoveredAt: timestamp(o.Now()),
		},
	}
	data, err := s.Render()
	if err != nil {
		return nil, fmt.Errorf("service %q: %w", t.Service, err)
	}
	s.Discovery.ToolCount = len(s.Tools)
	return &Result{Service: t.Service, Snapshot: s, Data: data, Skipped: skipped}, nil
}

// usableTools drops tools no descriptor may hold (a name models cannot be
// given, an input schema that is not an object schema), so one odd tool of
// a third-party server does not make the others undiscoverable.
func usableTools(path string, tools []Tool) (usable []Tool, skipped []string) {
	for _, tl := range tools {
		one := &Snapshot{Version: 2, MCP: SnapshotMCP{Transport: capability.TransportStreamableHTTP, Path: path}, Tools: []Tool{tl}}
		if _, err := one.Render(); err != nil {
			skipped = append(skipped, fmt.Sprintf("tool %q skipped: %v", tl.Name, err))
			continue
		}
		usable = append(usable, tl)
	}
	return usable, skipped
}

// running is a started wrapper.
type running struct {
	// base is http://127.0.0.1:<port>.
	base string
	// exited is closed when the wrapper (or docker run) has exited; exitErr
	// is then its wait error.
	exited  chan struct{}
	exitErr error
	// stop ends the wrapper and waits for it; safe to call once.
	stop func() error
}

// healthReport is the part of the wrapper's /healthz body discovery reads.
type healthReport struct {
	Status    string `json:"status"`
	Server    string `json:"server"`
	LastError string `json:"last_error"`
	LastExit  string `json:"last_exit"`
}

// waitHealthy polls /healthz until it answers 200. A wrapper whose child
// failed to start ("restarting" or "stopped") fails at once with the
// wrapper's reason: a snapshot of a crashing server would be wrong.
func waitHealthy(ctx context.Context, r *running) (*healthReport, error) {
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/healthz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			var h healthReport
			_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&h)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return &h, nil
			}
			last = fmt.Sprintf("status %q", h.Status)
			if h.Status == "restarting" || h.Status == "stopped" {
				reason := h.LastError
				if reason == "" {
					reason = h.LastExit
				}
				// The wrapper relays the server's own words: escaped.
				return nil, fmt.Errorf("the stdio MCP server did not start: %s", termsafe.String(reason))
			}
		} else {
			last = err.Error()
		}
		select {
		case <-r.exited:
			return nil, fmt.Errorf("the wrapper exited before it was healthy: %v", r.exitErr)
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s/healthz (%s): %w", r.base, last, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// tail keeps the last max bytes written (and copies everything to tee).
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
	tee io.Writer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tee != nil {
		_, _ = t.tee.Write(p)
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

func withLogs(err error, logs *tail) error {
	s := logs.String()
	if s == "" {
		return err
	}
	return &LogError{Err: err, Logs: s}
}

// LogError is a discovery failure with the wrapper's last output.
type LogError struct {
	Err  error
	Logs string
}

func (e *LogError) Error() string {
	return e.Err.Error() + "\nwrapper output (last lines):\n  " + strings.ReplaceAll(e.Logs, "\n", "\n  ")
}

func (e *LogError) Unwrap() error { return e.Err }

// ErrWrapperNotFound is returned in local mode when claw-mcp-stdio cannot be
// found.
var ErrWrapperNotFound = errors.New("claw-mcp-stdio not found next to claw or on PATH; build it (make build) or pass --wrapper")

func jsonArgs(args []string) string {
	if args == nil {
		args = []string{}
	}
	b, _ := json.Marshal(args)
	return string(b)
}
