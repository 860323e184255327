package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/broker"
	"github.com/clawdapus/clawgo/internal/continuity"
	"github.com/clawdapus/clawgo/internal/feeds"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/jsonl"
	"github.com/clawdapus/clawgo/internal/mediate"
	"github.com/clawdapus/clawgo/internal/metrics"
	"github.com/clawdapus/clawgo/internal/owners"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/sharedstate"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/version"
)

var flagHelp = flag.ErrHelp

// stages are the request stages plugged into the proxy: the feed Decorator
// (spec 003) and the managed-tool Mediator (spec 000), which share the
// proxy's audit logger and history writer.
type stages struct {
	opts     proxy.Options
	executor *toolexec.Executor
	mediator *mediate.Mediator
	broker   *broker.Broker
	history  *history.Writer
	rec      *recorder.Recorder
	redis    io.Closer
	owners   owners.Registry
	// metrics is the Prometheus sink, when CLLAMA_METRICS_ADDR is set.
	metrics *metrics.Sink
	// replica names this replica's history files ("" for history.jsonl).
	replica string
}

func (s *stages) Close() error {
	if s.redis != nil {
		_ = s.redis.Close()
	}
	if s.broker != nil {
		s.broker.Close()
	}
	if s.executor != nil {
		_ = s.executor.Close()
	}
	if s.mediator != nil {
		_ = s.mediator.Close() // its continuity log and the state directory's lock
	}
	return s.history.Close()
}

func wireStages(cfg proxy.Config, aud *audit.Logger, stderr io.Writer) (*stages, error) {
	st := &stages{}
	if cfg.HistoryDir != "" {
		opts, err := history.ParseSync(cfg.HistoryFsync)
		if err != nil {
			return nil, fmt.Errorf("CLLAMA_HISTORY_FSYNC: %w", err)
		}
		opts.OnSyncError = func(err error) { fmt.Fprintf(stderr, "cllama: %v (retried next interval)\n", err) }
		// A partial last line a crash left is cut off when a file is
		// first opened: an audit event says so. st.rec is set below,
		// before any file is opened (files open on their first entry).
		opts.OnRepair = func(agent string, c jsonl.Cut) {
			st.rec.Emit(audit.FileRepaired(agent, c.Path, c.Offset, c.Bytes))
		}
		opts.Replica = cfg.ReplicaID
		if opts.Replica == "" && cfg.StateURL != "" {
			// Replicas share the history directory: one file each.
			if h, err := os.Hostname(); err == nil {
				opts.Replica = h
			}
		}
		st.replica = opts.Replica
		hw, err := history.NewWriterWith(cfg.HistoryDir, opts)
		if err != nil {
			return nil, fmt.Errorf("CLAW_SESSION_HISTORY_DIR: %w", err)
		}
		st.history = hw
	}
	var shared mediate.ContinuityStore
	if cfg.StateURL != "" {
		c, err := sharedstate.Open(context.Background(), cfg.StateURL)
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		st.redis = c
		shared = sharedstate.NewContinuity(c, sharedstate.ContinuityOptions{Pod: cfg.Pod, MaxEntryBytes: cfg.ContinuityMaxEntryBytes})
		st.owners = sharedstate.NewOwners(c, cfg.Pod, 0)
		fmt.Fprintln(stderr, "cllama: continuity shared in Redis (CLLAMA_STATE_URL)")
	} else if cfg.ContinuityDir() == "" {
		fmt.Fprintln(stderr, "cllama: no CLLAMA_STATE_DIR or CLAW_SESSION_HISTORY_DIR: tool-loop continuity is kept in memory only")
	}
	// One recorder for every stage: the audit log, session history, and
	// whatever else listens (metrics, traces).
	var hist recorder.Appender
	if st.history != nil {
		hist = st.history
	}
	st.rec = recorder.New(aud, hist)
	st.executor = toolexec.New(toolexec.Options{NetHTTP: cfg.UpstreamClient == proxy.UpstreamNetHTTP})
	med, err := mediate.New(mediate.Options{Runner: st.executor, Recorder: st.rec, StateDir: cfg.ContinuityDir(), Continuity: shared,
		ContinuityMaxBytes: cfg.ContinuityMaxBytes, ContinuityMaxEntryBytes: cfg.ContinuityMaxEntryBytes})
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("mediation state %s: %w (set CLLAMA_STATE_DIR to a writable directory)", cfg.ContinuityDir(), err)
	}
	st.mediator = med
	if cfg.MetricsAddr != "" {
		_, sized := med.ContinuityStore().(continuity.Sizer)
		st.metrics = metrics.New(metrics.Options{Pod: cfg.Pod, Continuity: med.ContinuityStats, ContinuityBytesUnknown: !sized})
		st.rec.Add(st.metrics)
	}
	// Native mode: the runner's MCP client reaches the same executor and
	// recorder on /mcp.
	decorator := feeds.New(feeds.Options{Recorder: st.rec})
	st.broker = broker.New(broker.Options{Runner: st.executor, Recorder: st.rec, Pod: cfg.Pod, Feeds: decorator.Cached,
		MaxSessionsPerAgent: cfg.MCPMaxSessions, SessionIdle: cfg.MCPSessionIdle, MaxCallsPerAgent: cfg.MaxAgentConcurrency,
		MaxRequestBytes: cfg.MCPMaxBodyBytes, Version: version.String("cllama")})
	st.opts = proxy.Options{
		Broker:    st.broker,
		Owners:    st.owners,
		Recorder:  st.rec,
		History:   st.history,
		Decorator: decorator,
		Mediator:  med,
	}
	return st, nil
}
