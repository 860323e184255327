package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/admin"
	"github.com/clawdapus/clawgo/internal/alerts"
	"github.com/clawdapus/clawgo/internal/approvals"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/broker"
	"github.com/clawdapus/clawgo/internal/continuity"
	"github.com/clawdapus/clawgo/internal/feeds"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/keypool"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/mediate"
	"github.com/clawdapus/clawgo/internal/metrics"
	"github.com/clawdapus/clawgo/internal/owners"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/sharedstate"
	"github.com/clawdapus/clawgo/internal/spend"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/tracing"
	"github.com/clawdapus/clawgo/internal/version"
)

var flagHelp = flag.ErrHelp

// stages are the request stages plugged into the proxy: the feed Decorator
// (spec 003), the managed-tool Mediator (spec 000) and the MCP broker,
// which report to the proxy's one recorder.
type stages struct {
	opts     proxy.Options
	executor *toolexec.Executor
	mediator *mediate.Mediator
	broker   *broker.Broker
	// rec is the one recorder (proxy.OpenRecorder); history its session
	// history writer (nil when history is off), closed last.
	history *history.Writer
	rec     *recorder.Recorder
	redis   io.Closer
	owners  owners.Registry
	// metrics is the Prometheus sink, when CLLAMA_METRICS_ADDR is set.
	metrics *metrics.Sink
	// keys are the providers' key pools and circuits.
	keys *keypool.Pools
	// approvals holds calls for a person's decision.
	approvals *approvals.Manager
	// ledger keeps the budgets' counters in Redis with CLLAMA_STATE_URL
	// (nil: a file under the state directory).
	ledger spend.Ledger
	// pod is the pod-wide settings (<auth>/pod.json).
	pod *manifest.Pod
	// alerts is the pod's webhook (alerts.Discard without one); webhook
	// the same when it is one, to stop it.
	alerts  alerts.Sink
	webhook *alerts.Webhook
	// admin is the operator's listener, when CLLAMA_ADMIN_ADDR is set.
	admin *admin.Server
}

func (s *stages) Close() error {
	if s.webhook != nil {
		// Give the events of the last moments a chance to leave.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.webhook.Flush(ctx)
		cancel()
		s.webhook.Close()
	}
	if s.keys != nil {
		_ = s.keys.Close() // before Redis: it stops following it
	}
	if s.approvals != nil {
		_ = s.approvals.Close()
	}
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
	st := &stages{alerts: alerts.Discard}
	if err := st.wireOperator(cfg, stderr); err != nil {
		return nil, err
	}
	// One recorder for every stage: the audit log, session history, and
	// whatever else listens (metrics, traces).
	rec, hw, err := proxy.OpenRecorder(cfg, aud, func(err error) { fmt.Fprintf(stderr, "cllama: %v (retried next interval)\n", err) })
	if err != nil {
		return nil, err
	}
	st.rec, st.history = rec, hw
	var shared mediate.ContinuityStore
	var redisClient *redis.Client
	var sharedKeys keypool.Shared
	if cfg.StateURL != "" {
		c, err := sharedstate.Open(context.Background(), cfg.StateURL)
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		st.redis, redisClient = c, c
		shared = sharedstate.NewContinuity(c, sharedstate.ContinuityOptions{Pod: cfg.Pod, MaxEntryBytes: cfg.ContinuityMaxEntryBytes})
		st.owners = sharedstate.NewOwners(c, cfg.Pod, 0)
		sharedKeys = sharedstate.NewKeyStates(c, cfg.Pod)
		st.ledger = spend.NewRedisLedger(c, cfg.Pod)
		fmt.Fprintln(stderr, "cllama: continuity shared in Redis (CLLAMA_STATE_URL)")
	} else if cfg.ContinuityDir() == "" {
		fmt.Fprintln(stderr, "cllama: no CLLAMA_STATE_DIR or CLAW_SESSION_HISTORY_DIR: tool-loop continuity is kept in memory only")
	}
	results, err := openResults(cfg, redisClient, stderr)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	keys, err := proxy.OpenKeyPools(cfg, st.alerts, nil, func(err error) {
		st.rec.Emit(audit.Event{Type: audit.TypeError, Error: err.Error()})
	}, sharedKeys)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	st.keys = keys
	// The executor reads a service's answer up to the bound of one kept
	// result: what is over a tool's cap is kept, not lost.
	st.executor = toolexec.New(toolexec.Options{NetHTTP: cfg.UpstreamClient == proxy.UpstreamNetHTTP,
		MaxResponseBytes: max(toolexec.DefaultMaxResponseBytes, results.Limits().MaxResultBytes)})
	if st.approvals, err = openApprovals(cfg, redisClient, st.rec, st.alerts); err != nil {
		_ = st.Close()
		return nil, err
	}
	if st.admin != nil {
		st.approvals.Mount(st.admin)
	}
	med, err := mediate.New(mediate.Options{Runner: st.executor, Recorder: st.rec, StateDir: cfg.ContinuityDir(), Continuity: shared,
		ContinuityMaxBytes: cfg.ContinuityMaxBytes, ContinuityMaxEntryBytes: cfg.ContinuityMaxEntryBytes, Results: results, Approvals: st.approvals})
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("mediation state %s: %w (set CLLAMA_STATE_DIR to a writable directory)", cfg.ContinuityDir(), err)
	}
	st.mediator = med
	if cfg.MetricsAddr != "" {
		_, sized := med.ContinuityStore().(continuity.Sizer)
		st.metrics = metrics.New(metrics.Options{Pod: cfg.Pod, Continuity: med.ContinuityStats, ContinuityBytesUnknown: !sized, KeyPools: keys.Snapshot})
		st.rec.Add(st.metrics)
	}
	if tracing.Enabled() {
		// What each exchange did goes onto its span (recorder.TraceSink).
		st.rec.Add(recorder.TraceSink{})
	}
	// Native mode: the runner's MCP client reaches the same executor and
	// recorder on /mcp.
	decorator := feeds.New(feeds.Options{Recorder: st.rec})
	st.broker = broker.New(broker.Options{Runner: st.executor, Recorder: st.rec, Pod: cfg.Pod, Feeds: decorator.Cached,
		MaxSessionsPerAgent: cfg.MCPMaxSessions, SessionIdle: cfg.MCPSessionIdle, MaxCallsPerAgent: cfg.MaxAgentConcurrency,
		MaxRequestBytes: cfg.MCPMaxBodyBytes, Version: version.String("cllama"), Results: results, Approvals: st.approvals})
	spendOpts := proxy.SpendOptions{Ledger: st.ledger}
	if st.metrics != nil {
		spendOpts.Observe = st.metrics.Budget
	}
	st.opts = proxy.Options{
		Spend:     spendOpts,
		Admin:     st.admin,
		Alerts:    st.alerts,
		Broker:    st.broker,
		Owners:    st.owners,
		Recorder:  st.rec,
		Decorator: decorator,
		Mediator:  med,
		KeyPools:  keys,
	}
	return st, nil
}

// openApprovals is where held calls wait: in Redis with replicas (a
// decision through any replica releases the call held on another), else
// in memory with each pending request kept under the state directory, so
// the ones a previous process left pending end lost, recorded, as this
// one starts.
func openApprovals(cfg proxy.Config, client *redis.Client, rec *recorder.Recorder, alert alerts.Sink) (*approvals.Manager, error) {
	// A process of its own in the requests it holds: a restarted replica
	// does not take over what its previous process held.
	replica := cfg.ReplicaID
	if replica == "" {
		replica, _ = os.Hostname()
	}
	replica += "-" + approvals.NewID()[:8]
	o := approvals.Options{Emit: rec.Emit, Replica: replica}
	if alert != nil {
		o.Alert = alert.Alert
	}
	switch {
	case client != nil:
		s, err := approvals.NewRedis(context.Background(), client, cfg.Pod, replica, 0)
		if err != nil {
			return nil, fmt.Errorf("CLLAMA_STATE_URL: %w", err)
		}
		o.Store = s
	case cfg.ContinuityDir() != "":
		s, lost, err := approvals.OpenLocal(filepath.Join(cfg.ContinuityDir(), "approvals"), time.Now())
		if err != nil {
			return nil, fmt.Errorf("CLLAMA_STATE_DIR: %w", err)
		}
		o.Store = s
		m := approvals.New(o)
		m.Lost(lost)
		return m, nil
	}
	return approvals.New(o), nil
}

// wireOperator reads the pod-wide settings and builds what serves the
// operator: the alert webhook and the admin listener's routes.
func (st *stages) wireOperator(cfg proxy.Config, stderr io.Writer) error {
	pod, err := manifest.ReadPod(cfg.AuthDir)
	if err != nil {
		return fmt.Errorf("%w (CLAW_AUTH_DIR %s; recompile the pod with claw compile)", err, cfg.AuthDir)
	}
	st.pod = pod
	if pod.Alerts != nil {
		name := pod.Name
		if name == "" {
			name = cfg.Pod
		}
		st.webhook = alerts.NewWebhook(pod.Alerts, name, alerts.Options{})
		st.alerts = st.webhook
		fmt.Fprintln(stderr, "cllama: alerts go to the pod's webhook (x-claw.alerts)")
	}
	if cfg.AdminAddr == "" {
		return nil
	}
	token := cfg.AdminToken
	if cfg.AdminTokenFile != "" {
		if token, err = admin.ReadToken(cfg.AdminTokenFile); err != nil {
			return err
		}
	}
	if st.admin, err = admin.New(token); err != nil {
		return fmt.Errorf("CLLAMA_ADMIN_TOKEN(_FILE): %w", err)
	}
	// What an operator's client checks its token and address with.
	about := map[string]string{"pod": cfg.Pod, "version": version.String("cllama")}
	st.admin.Handle("GET /api/pod", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		admin.WriteJSON(w, http.StatusOK, about)
	}))
	return nil
}
