// Package proxy is cllama's HTTP edge (ARCHITECTURE.md "Run time"): it
// guards the edge (size limits, identity), routes "<provider>/<model>" to a
// provider and swaps the agent's credential for the provider's, hands the
// exchange to the optional feed Decorator and, for agents with managed
// tools, to the Mediator; everything else takes the passthrough path, which
// relays the upstream response as it arrives (SSE flushed event by event).
// It records audit events and session history for the passthrough path; the
// Mediator records its own exchanges.
//
// It owns no format logic beyond locating the top-level "model" and
// "stream" members of a request: its routes, error shapes, usage reading
// and end-of-stream detection come from each format's wire.Format, found
// in the registry (internal/wire/formats).
package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/clawdapus/clawgo/internal/admin"
	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/alerts"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/jsonl"
	"github.com/clawdapus/clawgo/internal/keypool"
	"github.com/clawdapus/clawgo/internal/owners"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/spend"
	"github.com/clawdapus/clawgo/internal/tracing"
	"github.com/clawdapus/clawgo/internal/wire"
	"github.com/clawdapus/clawgo/internal/wire/apierror"
	"github.com/clawdapus/clawgo/internal/wire/formats"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Options are the pluggable parts of a Server. The zero value is a plain
// passthrough proxy that records nothing.
type Options struct {
	// Recorder is where every audit event and history entry goes:
	// cllama's one recorder, which writes the audit log and session
	// history and feeds metrics and traces, shared with the other stages
	// (OpenRecorder opens it, with session history under
	// Config.HistoryDir). Nil records nothing: New opens no history of
	// its own.
	Recorder *recorder.Recorder
	// Decorator, when set, rewrites every routed exchange's Body before it
	// is sent (feeds, spec 003).
	Decorator exchange.Decorator
	// Mediator, when set, takes over the exchanges of agents with managed
	// tools (spec 000 "mediated mode"). The proxy has already emitted the
	// exchange's audit "request" event (with mediated=true); the Mediator
	// emits the response/error/tool_call events and writes the history
	// entry. Errors it writes should use package apierror.
	Mediator exchange.Mediator
	// Broker, when set, serves MCP on /mcp (native mode) for the agent
	// each request authenticates as (internal/broker).
	Broker AgentHandler
	// Owners, when set, records who owns each stored response instead of
	// a store New opens under the state directory (replicas share one).
	Owners owners.Registry
	// Admin, when set, is the operator's admin listener: features mount
	// their routes on it (Server.Admin).
	Admin *admin.Server
	// Alerts receives the events an operator must hear about (nil:
	// alerts.Discard).
	Alerts alerts.Sink
	// Transport performs upstream calls (nil: NewTransport of the
	// config's UpstreamClient).
	Transport http.RoundTripper
	// AgentCheckInterval is how often a cached agent's files are re-stat'ed
	// (0: agentctx.DefaultCheckInterval; negative: on every request).
	AgentCheckInterval time.Duration
	// KeyPools, when set, keeps the state of the providers' keys and
	// circuits (replicas share it through Redis: cmd/cllama builds it);
	// nil: New builds one with its state in <state dir>/keys.json,
	// closed by Close.
	KeyPools *keypool.Pools
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Spend configures prices, the pod's budget and where the budgets'
	// counters are kept.
	Spend SpendOptions
	// Idle, when set, runs once traffic has stopped (no request in
	// progress for 10 s, once per idle period), after the heap went back
	// to the OS: cmd/cllama takes its code pages out of its resident set
	// then.
	Idle func()
}

// AgentHandler serves a request of an authenticated agent.
type AgentHandler interface {
	ServeAgent(w http.ResponseWriter, r *http.Request, a *agentctx.Agent)
}

// Server is cllama's HTTP handler. It is safe for concurrent use.
type Server struct {
	cfg       Config
	agents    *agentctx.Store
	providers *providerSource
	router    modelRouter
	// modelLists caches providers' own model lists (GET /v1/models).
	modelLists modelListCache
	transport  http.RoundTripper
	// rec is where every event and history entry goes.
	rec       *recorder.Recorder
	decorator exchange.Decorator
	mediator  exchange.Mediator
	admin     *admin.Server
	alerts    alerts.Sink
	broker    AgentHandler
	now       func() time.Time

	// formats are the registered formats; a Route's urls and the
	// routes ServeHTTP matches are indexed alike.
	formats []wire.Format
	// fallback shapes the errors of requests on no format's route.
	fallback wire.Format
	noRoute  string // the list of served routes, for 404 messages
	// stored is, per format, its wire.Stored ability (nil without);
	// objectRoutes are the routes on stored objects; owners knows who
	// owns each stored object.
	stored       []*storedFormat
	objectRoutes []objectRoute
	// forward is the allowlist of runner headers sent upstream
	// (forwardedHeaders).
	forward []string
	owners  owners.Registry

	// admit bounds the bodies and per-agent requests in progress.
	admit *admission
	// pools keep the keys' and circuits' state; ownPools when New
	// opened them (Close closes them).
	pools    *keypool.Pools
	ownPools bool
	// spend costs model calls and holds them to the budgets.
	spend *spend.Meter

	idPrefix string
	idSeq    atomic.Uint64
}

// Admin is the operator's admin listener, nil when it is off
// (CLLAMA_ADMIN_ADDR unset): features mount their routes on it.
func (s *Server) Admin() *admin.Server { return s.admin }

// Alerts is where the events an operator must hear about go (the pod's
// webhook, or alerts.Discard).
func (s *Server) Alerts() alerts.Sink { return s.alerts }

// New builds a Server from cfg. It fails when providers.json is unreadable
// or invalid, or the state directory cannot be used: operator errors
// better reported at start-up than per request.
func New(cfg Config, opts Options) (*Server, error) {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:       cfg,
		transport: opts.Transport,
		rec:       opts.Recorder,
		decorator: opts.Decorator,
		mediator:  opts.Mediator,
		broker:    opts.Broker,
		admin:     opts.Admin,
		alerts:    opts.Alerts,
		now:       opts.Now,
		formats:   formats.All(),
		fallback:  formats.Fallback(),
	}
	if s.alerts == nil {
		s.alerts = alerts.Discard
	}
	s.admit = newAdmission(cfg.MaxInflightBytes, cfg.MaxAgentInflightBytes, cfg.MaxAgentConcurrency, cfg.MaxQueuedPerAgent, cfg.QueueWait)
	s.admit.idle = opts.Idle
	s.noRoute = "cllama serves"
	for i, f := range s.formats {
		sep := ","
		if i == 0 {
			sep = ""
		}
		s.noRoute += sep + " POST " + f.Endpoint().Route
	}
	s.forward = forwardedHeaders(s.formats)
	var err error
	if s.stored, s.objectRoutes, err = storedFormats(s.formats); err != nil {
		return nil, err
	}
	for _, o := range s.objectRoutes {
		s.noRoute += ", " + o.Method + " " + o.Route
	}
	if s.broker != nil {
		s.noRoute += ", MCP on " + pathMCP
	}
	s.noRoute += ", GET " + pathModels + " and GET " + pathHealth
	if s.now == nil {
		s.now = time.Now
	}
	if s.transport == nil {
		s.transport = NewTransport(cfg.UpstreamClient)
	}
	s.agents = agentctx.NewStore(cfg.ContextRoot, agentctx.StoreOptions{
		CheckInterval: opts.AgentCheckInterval,
		Now:           s.now,
		OnError: func(id string, err error) {
			s.rec.Emit(audit.Event{Type: audit.TypeManifestError, ClawID: id, Error: err.Error()})
		},
	})
	if s.pools = opts.KeyPools; s.pools == nil {
		if s.pools, err = OpenKeyPools(cfg, s.alerts, s.now, func(err error) {
			s.rec.Emit(audit.Event{Type: audit.TypeError, Error: err.Error()})
		}, nil); err != nil {
			return nil, err
		}
		s.ownPools = true
	}
	ps, err := newProviderSource(cfg.AuthDir, cfg.ProviderEnv, s.formats, s.pools, func(err error) {
		s.rec.Emit(audit.Event{Type: audit.TypeManifestError, Error: err.Error()})
	})
	if err != nil {
		return nil, err
	}
	s.providers = ps
	s.router = newModelRouter(cfg, s.formats)
	if d := cfg.DefaultProvider; d != "" && ps.get(s.now()).routes[d] == nil {
		return nil, fmt.Errorf("CLLAMA_DEFAULT_PROVIDER: %q is not a configured provider (configured: %s)", d, ps.get(s.now()).names)
	}
	if s.spend, err = s.newMeter(opts.Spend); err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	s.idPrefix = "req_" + hex.EncodeToString(b[:]) + "_"
	// Opened last: nothing above can fail once its log is open.
	if opts.Owners != nil {
		s.owners = opts.Owners
		return s, nil
	}
	s.owners, err = owners.Open(owners.Options{Dir: cfg.ContinuityDir(), Max: cfg.StoredIDsMax,
		OnError:  func(err error) { s.rec.Emit(audit.Event{Type: audit.TypeError, Error: err.Error()}) },
		OnRepair: func(c jsonl.Cut) { s.rec.Emit(audit.FileRepaired("", c.Path, c.Offset, c.Bytes)) }})
	if err != nil {
		return nil, fmt.Errorf("%w (CLLAMA_STATE_DIR must be a writable directory)", err)
	}
	return s, nil
}

// Close flushes and closes what New opened for itself: the record of who
// owns each stored response and, without Options.KeyPools, the keys'
// state. The recorder and its history writer are the caller's to close.
// It also stops the memory trims still to come.
func (s *Server) Close() error {
	s.admit.close()
	err := errors.Join(s.owners.Close(), s.spend.Close())
	if s.ownPools {
		err = errors.Join(err, s.pools.Close())
	}
	return err
}

// KeyPools returns the providers' key pools and circuits (for metrics).
func (s *Server) KeyPools() *keypool.Pools { return s.pools }

// KeyStateFile is the file under the state directory where the keys'
// state survives a restart.
const KeyStateFile = "keys.json"

// OpenKeyPools opens the pools of the providers' keys with cfg's circuit
// settings, their state in <state dir>/keys.json (memory only without a
// state directory) and, with shared, in the store replicas share.
func OpenKeyPools(cfg Config, alerts keypool.Alerter, now func() time.Time, onError func(error), shared keypool.Shared) (*keypool.Pools, error) {
	o := keypool.Options{Failures: cfg.CircuitFailures, Open: cfg.CircuitOpen, Now: now, Alerts: alerts, OnError: onError, Shared: shared}
	if dir := cfg.ContinuityDir(); dir != "" {
		o.StateFile = filepath.Join(dir, KeyStateFile)
	}
	p, err := keypool.New(o)
	if err != nil {
		return nil, fmt.Errorf("%w (CLLAMA_STATE_DIR)", err)
	}
	return p, nil
}

// Config returns the configuration the server runs with (defaults filled).
func (s *Server) Config() Config { return s.cfg }

// Agents returns the agent context store, for stages that need to resolve
// agents themselves.
func (s *Server) Agents() *agentctx.Store { return s.agents }

// Providers returns the names of the configured providers, sorted and
// comma-separated (for start-up logs).
func (s *Server) Providers() string { return s.providers.get(s.now()).names }

// newRequestID returns a process-unique id: a random per-process prefix
// and a counter, so ids stay unique across restarts without a syscall per
// request.
func (s *Server) newRequestID() string {
	return s.idPrefix + strconv.FormatUint(s.idSeq.Add(1), 36)
}

const pathHealth = "/health"

// ServeHTTP routes each registered format's endpoint, the routes on stored
// objects, the model list and GET /health.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tracing.Enabled() {
		// One server span per request, joining the runner's trace when it
		// sent a traceparent; stages add what they learn to it.
		ctx, span := tracing.Start(tracing.Extract(r.Context(), r.Header), "cllama "+r.Method+" "+s.spanRoute(r.URL.Path), trace.SpanKindServer)
		sw := &tracing.StatusWriter{ResponseWriter: w}
		defer func() {
			span.SetAttributes(attribute.Int("http.response.status_code", sw.Status))
			if sw.Status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(sw.Status))
			}
			span.End()
		}()
		w, r = sw, r.WithContext(ctx)
	}
	if r.Body != nil && r.Body != http.NoBody {
		// Every body is read within BodyReadTimeout of the request's
		// arrival, by its route (readBody, which then lifts the
		// deadline) or, for a route that takes none, by the server
		// discarding it: no body holds a connection open longer.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout))
	}
	for i, f := range s.formats {
		if r.URL.Path == f.Endpoint().Route {
			s.serveGeneration(w, r, i)
			return
		}
		if tc, ok := f.(wire.TokenCounter); ok && r.URL.Path == tc.CountTokens().Route {
			s.serveCount(w, r, i)
			return
		}
	}
	if s.serveObjectRoutes(w, r) {
		return
	}
	if r.URL.Path == pathMCP && s.broker != nil {
		s.serveMCP(w, r)
		return
	}
	if r.URL.Path == pathModels || strings.HasPrefix(r.URL.Path, pathModels+"/") {
		s.serveModels(w, r)
		return
	}
	if r.URL.Path == pathHealth {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "use GET /health").Write(w, s.fallback)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
		return
	}
	s.serveNoRoute(w, r)
}

// spanRoute is a request path as a span names it: the route it matched,
// bounded (object ids and unknown paths are not span names).
func (s *Server) spanRoute(path string) string {
	for _, o := range s.objectRoutes {
		if id, ok := strings.CutPrefix(path, o.prefix); ok {
			if id, ok = strings.CutSuffix(id, o.suffix); ok && id != "" && !strings.Contains(id, "/") {
				return o.Route
			}
		}
	}
	switch {
	case path == pathMCP, path == pathHealth, path == pathModels:
		return path
	case strings.HasPrefix(path, "/v1/models/"):
		return "/v1/models/{model}"
	case strings.HasPrefix(path, "/v1/") && strings.Count(path, "/") <= 4 && len(path) <= 40:
		return path
	}
	return "other"
}

// serveNoRoute answers a request for no route: a 404 in the error shape
// of the path's family (the format whose route the path extends, so an
// Anthropic SDK calling /v1/messages/batches reads an Anthropic error;
// the fallback format otherwise), recorded as an audit error event. A path
// that repeats /v1 comes from a base URL ending in /v1 given to a client
// that adds /v1 itself: the message says which base URL to configure.
func (s *Server) serveNoRoute(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	id := s.newRequestID()
	w.Header().Set("X-Request-Id", id)
	path := r.URL.Path
	msg := fmt.Sprintf("no route for %s %s; %s", r.Method, quoteForMessage(path), s.noRoute)
	if rest, ok := strings.CutPrefix(path, "/v1/v1"); ok && (rest == "" || rest[0] == '/') {
		path = "/v1" + rest
		msg = fmt.Sprintf("no route for %s %s: the path repeats /v1, so the base URL given to the client already ends in /v1 and the client adds /v1 itself; configure the base URL as %s (without /v1)",
			r.Method, quoteForMessage(r.URL.Path), baseURLOf(r))
	}
	f := s.family(path)
	se := apierror.New(http.StatusNotFound, apierror.TypeNotFound, msg)
	a, _ := s.caller(r)
	s.refuse(w, f, &recorder.Refusal{RequestID: id, Format: f.Name(), Agent: a, Start: start, Err: se})
}

// family is the format whose route path is, or extends by a path
// segment; the fallback format when none.
func (s *Server) family(path string) wire.Format {
	for _, f := range s.formats {
		route := f.Endpoint().Route
		if rest, ok := strings.CutPrefix(path, route); ok && (rest == "" || rest[0] == '/') {
			return f
		}
	}
	return s.fallback
}

// baseURLOf is the base URL a runner reached cllama at (scheme and host).
func baseURLOf(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// retrySoon marks se as one the runner may retry in a second
// (Retry-After: 1).
func retrySoon(se *apierror.Error) *apierror.Error {
	se.RetryAfter = 1
	return se
}

var (
	errMissingCredentials = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication,
		"missing credentials: send Authorization: Bearer <agent-id>:<secret> (or the same value in x-api-key)")
	errMalformedCredentials = apierror.New(http.StatusUnauthorized, apierror.TypeAuthentication,
		"malformed credentials: the API key must be \"<agent-id>:<secret>\" from the agent's metadata.json token")
	errBadCredentials = apierror.New(http.StatusForbidden, apierror.TypePermission, "invalid credentials")
)

func asStatus(err error) *apierror.Error {
	var se *apierror.Error
	if errors.As(err, &se) {
		return se
	}
	var re *errRequest
	if errors.As(err, &re) {
		return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, re.msg)
	}
	return apierror.New(http.StatusInternalServerError, apierror.TypeAPI, err.Error())
}
