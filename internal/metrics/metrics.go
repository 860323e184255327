// Package metrics is the recorder sink (internal/recorder) that turns
// what cllama's stages report into Prometheus metrics, served in the text
// format on a listener of its own (CLLAMA_METRICS_ADDR). Label values are
// bounded: agents, tools, services and feeds come from compiled manifests
// (a request refused before its agent was known is agent "unknown", a
// tool name a model made up is tool "unknown"); models, which runners
// name, are capped at MaxModels distinct values, the rest "other".
package metrics

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/keypool"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/toolexec"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// MaxModels bounds the distinct values of the model label.
const MaxModels = 64

// maxStreams bounds the streams tracked as active (a lost end event must
// not grow the set without bound).
const maxStreams = 1 << 16

// Label values standing for what is not (or may not be) a compiled name.
const (
	Unknown = "unknown"
	Other   = "other"
)

// Sink records metrics. It implements recorder.Sink.
type Sink struct {
	reg   *prometheus.Registry
	names []string

	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	firstByte     *prometheus.HistogramVec
	overhead      *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	rounds        prometheus.Histogram
	toolCalls     *prometheus.CounterVec
	toolDuration  *prometheus.HistogramVec
	budgets       *prometheus.CounterVec
	cost          *prometheus.CounterVec
	budgetSpent   *prometheus.GaugeVec
	budgetLimit   *prometheus.GaugeVec
	feedFetches   *prometheus.CounterVec
	feedHits      *prometheus.CounterVec
	manifestError *prometheus.CounterVec
	fallbacks     *prometheus.CounterVec
	activeStreams prometheus.Gauge
	approvals     *prometheus.CounterVec
	approvalsOpen prometheus.Gauge

	mu      sync.Mutex
	models  map[string]struct{}
	streams map[string]struct{}
	// held are the approval requests this process holds (bounded like
	// streams).
	held map[string]struct{}
}

var _ recorder.Sink = (*Sink)(nil)

// Options configure a Sink.
type Options struct {
	// Continuity, when set, reports the continuity store's entries and
	// bytes (scraped, not pushed).
	Continuity func() (entries int, bytes int64)
	// ContinuityBytesUnknown leaves cllama_continuity_bytes out: a store
	// that does not count its bytes (Redis, continuity.Counter) reports
	// entries only, rather than a size of 0.
	ContinuityBytesUnknown bool
	// Pod is a constant label on every metric.
	Pod string
	// KeyPools, when set, reports the providers' circuits and keys
	// (scraped): cllama_provider_circuit_state, cllama_key_state.
	KeyPools func() []keypool.ProviderState
}

// New returns a Sink with its own registry (Go runtime and process
// collectors included).
func New(o Options) *Sink {
	reg := prometheus.NewRegistry()
	var constLabels prometheus.Labels
	if o.Pod != "" {
		constLabels = prometheus.Labels{"pod": o.Pod}
	}
	var names []string
	f := func(name, help string) (string, string, prometheus.Labels) {
		names = append(names, name)
		return name, help, constLabels
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		n, h, c := f(name, help)
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: n, Help: h, ConstLabels: c}, labels)
		reg.MustRegister(v)
		return v
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		n, h, c := f(name, help)
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: n, Help: h, ConstLabels: c, Buckets: buckets}, labels)
		reg.MustRegister(v)
		return v
	}
	latency := []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	fast := []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	s := &Sink{
		reg:           reg,
		requests:      counter("cllama_requests_total", "Requests answered, by agent, format, outcome (ok, upstream_error, refused, budget_exhausted, error) and HTTP status.", "agent", "format", "outcome", "status"),
		duration:      histogram("cllama_request_duration_seconds", "Time from a request's arrival to its last byte (streams included).", latency, "format", "mediated"),
		firstByte:     histogram("cllama_upstream_first_byte_seconds", "Time from a request's arrival to the provider's first response headers.", latency, "format", "mediated"),
		overhead:      histogram("cllama_proxy_overhead_seconds", "Time cllama spent before the provider had the request (edge checks, body, feeds, tool presentation).", fast, "format", "mediated"),
		tokens:        counter("cllama_tokens_total", "Tokens billed, by agent, model and direction (in, out); a mediated turn counts every hidden round.", "agent", "model", "direction"),
		toolCalls:     counter("cllama_tool_calls_total", "Managed tool calls, by agent, tool, service, outcome (ok or the error code) and mode (mediated, native).", "agent", "tool", "service", "outcome", "mode"),
		toolDuration:  histogram("cllama_tool_call_duration_seconds", "Managed tool call latency, by tool and mode.", latency, "tool", "mode"),
		budgets:       counter("cllama_budget_exhaustions_total", "Mediated turns ended because a budget (max_rounds, total_timeout_ms) ran out.", "agent"),
		feedFetches:   counter("cllama_feed_fetches_total", "Feed fetches, by agent, feed and outcome (ok, error, cached, stale).", "agent", "feed", "outcome"),
		feedHits:      counter("cllama_feed_cache_hits_total", "Feeds served from the cache without a fetch.", "agent", "feed"),
		manifestError: counter("cllama_manifest_errors_total", "Agent context files or providers.json that failed to load.", "agent"),
		fallbacks:     counter("cllama_fallbacks_total", "Model calls sent to the next target of their fallback chain, by the \"<provider>/<model>\" that could not answer, the target and why (rate_limited, keys_dead, overloaded, server_error, connection_error, timeout, circuit_open).", "from", "to", "reason"),
		approvals:     counter("cllama_approvals_total", "Held calls' approval requests ended, by agent, tool and decision (approved, denied, timeout, cancelled, lost).", "agent", "tool", "decision"),
		cost:          counter("cllama_cost_usd_total", "What model calls cost in US dollars, by agent, provider and model (calls to a model with no price are not counted).", "agent", "provider", "model"),
		models:        map[string]struct{}{},
		streams:       map[string]struct{}{},
		held:          map[string]struct{}{},
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		n, h, c := f(name, help)
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: n, Help: h, ConstLabels: c}, labels)
		reg.MustRegister(v)
		return v
	}
	s.budgetSpent = gauge("cllama_budget_spent", "What a budget's current window has spent (US dollars for unit usd), by agent (empty for the pod's), scope, unit and window.", "agent", "scope", "unit", "per")
	s.budgetLimit = gauge("cllama_budget_limit", "A budget's limit (US dollars for unit usd), by agent (empty for the pod's), scope, unit and window.", "agent", "scope", "unit", "per")
	n, h, c := f("cllama_mediated_rounds", "Model calls per mediated turn (hidden rounds plus the final one).")
	s.rounds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: n, Help: h, ConstLabels: c, Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10, 16}})
	reg.MustRegister(s.rounds)
	n, h, c = f("cllama_approvals_pending", "Calls this cllama holds waiting for a person's decision.")
	s.approvalsOpen = prometheus.NewGauge(prometheus.GaugeOpts{Name: n, Help: h, ConstLabels: c})
	reg.MustRegister(s.approvalsOpen)
	n, h, c = f("cllama_active_streams", "Streaming requests in progress.")
	s.activeStreams = prometheus.NewGauge(prometheus.GaugeOpts{Name: n, Help: h, ConstLabels: c})
	reg.MustRegister(s.activeStreams)
	if o.Continuity != nil {
		cont := o.Continuity
		n, h, c = f("cllama_continuity_entries", "Conversations whose hidden tool rounds cllama keeps (continuity store).")
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: n, Help: h, ConstLabels: c}, func() float64 { e, _ := cont(); return float64(e) }))
		if !o.ContinuityBytesUnknown {
			n, h, c = f("cllama_continuity_bytes", "Size of the continuity store.")
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: n, Help: h, ConstLabels: c}, func() float64 { _, b := cont(); return float64(b) }))
		}
	}
	if o.KeyPools != nil {
		kc := &keyCollector{pools: o.KeyPools}
		n, h, c = f("cllama_provider_circuit_state", "A provider's circuit: 0 closed, 1 open (requests go to the fallback), 2 half-open (one probe goes).")
		kc.circuit = prometheus.NewDesc(n, h, []string{"provider"}, c)
		n, h, c = f("cllama_key_state", "A provider key's state, by its id in providers.json (never the secret): 0 active, 1 cooling down, 2 dead (refused by the provider), 3 circuit open.")
		kc.key = prometheus.NewDesc(n, h, []string{"provider", "key"}, c)
		reg.MustRegister(kc)
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.names = names
	return s
}

// Handler serves the metrics in the Prometheus text format.
func (s *Sink) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Names are the names of cllama's own metrics (not the Go runtime's).
func (s *Sink) Names() []string { return slices.Clone(s.names) }

// Registry is the sink's registry (tests gather from it).
func (s *Sink) Registry() *prometheus.Registry { return s.reg }

func agentLabel(id string) string {
	if id == "" {
		return Unknown
	}
	return id
}

// model bounds the model label.
func (s *Sink) model(m string) string {
	if m == "" {
		return Unknown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.models[m]; ok {
		return m
	}
	if len(s.models) >= MaxModels {
		return Other
	}
	s.models[m] = struct{}{}
	return m
}

func seconds(ms *int64) (float64, bool) {
	if ms == nil {
		return 0, false
	}
	return float64(*ms) / 1000, true
}

// Event implements recorder.Sink.
func (s *Sink) Event(e *audit.Event) {
	switch e.Type {
	case audit.TypeRequest:
		if e.Stream && e.RequestID != "" {
			s.mu.Lock()
			if _, ok := s.streams[e.RequestID]; !ok && len(s.streams) < maxStreams {
				s.streams[e.RequestID] = struct{}{}
				s.activeStreams.Inc()
			}
			s.mu.Unlock()
		}
	case audit.TypeToolCall:
		// A call that named a compiled tool carries its service; any
		// other (a name the model made up, whatever the outcome: unknown,
		// or past a cap before it was resolved) is tool "unknown".
		tool, service := e.Tool, e.Service
		if e.Status == toolexec.CodeUnknownTool || tool == "" || service == "" {
			tool, service = Unknown, Unknown
		}
		mode := e.Mode
		if mode == "" {
			mode = manifest.ModeMediated
		}
		status := e.Status
		if status == "" {
			status = Unknown
		}
		s.toolCalls.WithLabelValues(agentLabel(e.ClawID), tool, service, status, mode).Inc()
		if v, ok := seconds(e.LatencyMS); ok && status != toolexec.CodeDuplicate {
			s.toolDuration.WithLabelValues(tool, mode).Observe(v)
		}
	case audit.TypeFeedFetch:
		outcome := e.Status
		switch {
		case e.Cached:
			outcome = "cached"
			s.feedHits.WithLabelValues(agentLabel(e.ClawID), e.Feed).Inc()
		case e.Stale:
			outcome = "stale"
		}
		s.feedFetches.WithLabelValues(agentLabel(e.ClawID), e.Feed, outcome).Inc()
	case audit.TypeManifestError:
		s.manifestError.WithLabelValues(agentLabel(e.ClawID)).Inc()
	case audit.TypeFallback:
		s.fallbacks.WithLabelValues(s.model(e.FallbackFrom), s.model(e.Model), e.FallbackReason).Inc()
	case audit.TypeApprovalRequested, audit.TypeApprovalDecided:
		s.approval(e)
	}
	// A request ends with its response event or an error event with a
	// status; other error events are notes (a history write that failed,
	// a retry of a busy provider, a session closed).
	if !(e.Type == audit.TypeResponse || e.Type == audit.TypeError && e.StatusCode != 0 && e.ErrorType != audit.ErrorTypeRetry) {
		return
	}
	if e.RequestID != "" {
		s.mu.Lock()
		if _, ok := s.streams[e.RequestID]; ok {
			delete(s.streams, e.RequestID)
			s.activeStreams.Dec()
		}
		s.mu.Unlock()
	}
	agent, format := agentLabel(e.ClawID), e.Format
	if format == "" {
		format = Unknown
	}
	mediated := strconv.FormatBool(e.Mediated)
	outcome := "ok"
	switch {
	case e.Type == audit.TypeResponse && (e.StatusCode < 200 || e.StatusCode > 299):
		outcome = "upstream_error"
	case e.Type == audit.TypeError && e.ErrorType == apierror.TypeBudgetExhausted:
		outcome = "budget_exhausted"
		s.budgets.WithLabelValues(agent).Inc()
	case e.Type == audit.TypeError && e.StatusCode >= 400 && e.StatusCode < 500:
		outcome = "refused"
	case e.Type == audit.TypeError:
		outcome = "error"
	}
	s.requests.WithLabelValues(agent, format, outcome, strconv.Itoa(e.StatusCode)).Inc()
	if v, ok := seconds(e.LatencyMS); ok {
		s.duration.WithLabelValues(format, mediated).Observe(v)
	}
	if e.FirstByte > 0 {
		s.firstByte.WithLabelValues(format, mediated).Observe(e.FirstByte.Seconds())
	}
	if e.Sent > 0 {
		s.overhead.WithLabelValues(format, mediated).Observe(e.Sent.Seconds())
	}
	if e.CostUSD.Known && e.CostUSD.MicroUSD > 0 {
		provider, _, _ := strings.Cut(e.Model, "/")
		s.cost.WithLabelValues(agent, s.model(provider), s.model(e.Model)).Add(float64(e.CostUSD.MicroUSD) / 1e6)
	}
	if e.TokensIn != nil || e.TokensOut != nil {
		model := s.model(e.Model)
		if e.TokensIn != nil && *e.TokensIn > 0 {
			s.tokens.WithLabelValues(agent, model, "in").Add(float64(*e.TokensIn))
		}
		if e.TokensOut != nil && *e.TokensOut > 0 {
			s.tokens.WithLabelValues(agent, model, "out").Add(float64(*e.TokensOut))
		}
	}
}

// keyCollector reports the key pools' state at each scrape.
type keyCollector struct {
	pools        func() []keypool.ProviderState
	circuit, key *prometheus.Desc
}

func (k *keyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- k.circuit
	ch <- k.key
}

func (k *keyCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range k.pools() {
		ch <- prometheus.MustNewConstMetric(k.circuit, prometheus.GaugeValue, float64(p.Circuit), p.Provider)
		for _, key := range p.Keys {
			ch <- prometheus.MustNewConstMetric(k.key, prometheus.GaugeValue, float64(key.State), p.Provider, key.ID)
		}
	}
}

// Budget sets a budget's gauges: spent in its current window and its
// limit (micro-USD for unit usd, shown in dollars).
func (s *Sink) Budget(agent, scope, unit, per string, spent, limit int64) {
	if scope == "pod" {
		agent = ""
	} else {
		agent = agentLabel(agent)
	}
	sv, lv := float64(spent), float64(limit)
	if unit == "usd" {
		sv, lv = sv/1e6, lv/1e6
	}
	s.budgetSpent.WithLabelValues(agent, scope, unit, per).Set(sv)
	s.budgetLimit.WithLabelValues(agent, scope, unit, per).Set(lv)
}

// Entry implements recorder.Sink: a mediated turn's rounds.
func (s *Sink) Entry(e *history.Entry) {
	if e.Format != history.FormatMCP && e.Usage.TotalRounds > 0 {
		s.rounds.Observe(float64(e.Usage.TotalRounds))
	}
}

// approval counts an approval request held or ended.
func (s *Sink) approval(e *audit.Event) {
	if e.Approval == nil {
		return
	}
	id := e.Approval.ID
	s.mu.Lock()
	_, held := s.held[id]
	switch {
	case e.Type == audit.TypeApprovalRequested && !held && len(s.held) < maxStreams:
		s.held[id] = struct{}{}
		s.approvalsOpen.Inc()
	case e.Type == audit.TypeApprovalDecided && held:
		delete(s.held, id)
		s.approvalsOpen.Dec()
	}
	s.mu.Unlock()
	if e.Type == audit.TypeApprovalDecided {
		tool := e.Tool
		if tool == "" {
			tool = Unknown
		}
		s.approvals.WithLabelValues(agentLabel(e.ClawID), tool, e.Approval.Decision).Inc()
	}
}
