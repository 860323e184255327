package proxy

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/keypool"
	"github.com/clawdapus/clawgo/internal/owners"
)

// Defaults of the container contract (ARCHITECTURE.md "Compatibility
// contract") and of cllama's own bounds.
const (
	DefaultListenAddr        = ":8080"
	DefaultContextRoot       = "/claw/context"
	DefaultAuthDir           = "/claw/auth"
	DefaultMaxBodyBytes      = 32 << 20
	DefaultFirstByteTimeout  = 5 * time.Minute
	DefaultStreamIdleTimeout = 2 * time.Minute
	DefaultBodyReadTimeout   = time.Minute
	DefaultShutdownTimeout   = 30 * time.Second
	// DefaultReadHeaderTimeout bounds the read of a request's header, and
	// DefaultIdleTimeout a kept-alive connection's wait for its next
	// request.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	// DefaultMCPMaxBodyBytes bounds an MCP request body (a JSON-RPC
	// message, far smaller than a model request), when the body limit is
	// not smaller.
	DefaultMCPMaxBodyBytes = 4 << 20
	// DefaultHistoryFsync syncs history files in the background once a
	// second: an fsync per exchange would add about a millisecond to each.
	DefaultHistoryFsync = "1s"
	// UpstreamH1 and UpstreamNetHTTP are the values of UpstreamClient.
	UpstreamH1      = "h1"
	UpstreamNetHTTP = "net/http"
	// DefaultStoredIDsMax bounds the stored responses whose owners cllama
	// remembers.
	DefaultStoredIDsMax = owners.DefaultMax
	// InflightBodies is how many bodies of the largest accepted size the
	// in-flight budget holds when none is configured.
	InflightBodies = 8
	// AgentInflightShare is the part of the in-flight budget one agent may
	// hold when no share is configured (1/AgentInflightShare of it, at
	// least one body of the largest accepted size).
	AgentInflightShare = 4
	// DefaultMaxAgentConcurrency bounds one agent's requests in progress.
	DefaultMaxAgentConcurrency = 32
	// DefaultMaxQueuedPerAgent and DefaultQueueWait bound the requests of
	// an agent waiting for one of its slots, and how long each waits.
	DefaultMaxQueuedPerAgent = 512
	DefaultQueueWait         = 30 * time.Second
)

// Config is everything cllama reads from its flags and environment, read
// once at start-up. Nothing below this struct reads the environment.
type Config struct {
	ListenAddr  string // LISTEN_ADDR / -listen
	ContextRoot string // CLAW_CONTEXT_ROOT / -context-root
	AuthDir     string // CLAW_AUTH_DIR / -auth-dir
	// HistoryDir enables session history when non-empty
	// (CLAW_SESSION_HISTORY_DIR / -history-dir).
	HistoryDir string
	Pod        string // CLAW_POD / -pod
	// StateDir holds state that must survive a restart: the mediation
	// loop's continuity store (CLLAMA_STATE_DIR / -state-dir). Empty means
	// <HistoryDir>/.continuity when history is on, else memory only.
	StateDir string
	// ContinuityMaxBytes bounds the continuity store's total size and
	// ContinuityMaxEntryBytes one turn's entry in it
	// (CLLAMA_CONTINUITY_MAX_BYTES / -continuity-max-bytes,
	// CLLAMA_CONTINUITY_MAX_ENTRY_BYTES / -continuity-max-entry-bytes);
	// zero means mediate's defaults.
	ContinuityMaxBytes      int64
	ContinuityMaxEntryBytes int64
	// ResultMaxBytes bounds one kept tool result (a longer one is cut,
	// saying so), ResultStoreAgentBytes one agent's kept results and
	// ResultStoreBytes all of them (CLLAMA_RESULT_MAX_BYTES,
	// CLLAMA_RESULT_STORE_AGENT_BYTES, CLLAMA_RESULT_STORE_BYTES); zero
	// means resultstore's defaults (64 MiB, 256 MiB, 1 GiB).
	ResultMaxBytes        int64
	ResultStoreAgentBytes int64
	ResultStoreBytes      int64
	// StoredIDsMax bounds how many stored responses (Responses API) cllama
	// remembers the owner of, the oldest forgotten first
	// (CLLAMA_STORED_IDS_MAX / -stored-ids-max). They are kept in
	// ContinuityDir when there is one.
	StoredIDsMax int

	// MaxBodyBytes bounds a runner's request body; larger is a 413
	// (CLLAMA_MAX_BODY_BYTES / -max-body-bytes).
	MaxBodyBytes int64
	// MaxInflightBytes bounds the request bodies held by all requests in
	// progress together; a request past it is a 503 with Retry-After
	// (CLLAMA_MAX_INFLIGHT_BYTES / -max-inflight-bytes). At least
	// MaxBodyBytes; zero means InflightBodies × MaxBodyBytes.
	MaxInflightBytes int64
	// MaxAgentInflightBytes bounds the request bodies one agent's requests
	// in progress hold together; past it is a 429 with Retry-After
	// (CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT / -max-inflight-bytes-per-agent).
	// Between MaxBodyBytes and MaxInflightBytes; zero means
	// MaxInflightBytes / AgentInflightShare, at least MaxBodyBytes.
	MaxAgentInflightBytes int64
	// MaxAgentConcurrency bounds one agent's requests in progress, on
	// every route; one more is a 429 with Retry-After
	// (CLLAMA_MAX_CONCURRENT_PER_AGENT / -max-concurrent-per-agent).
	MaxAgentConcurrency int
	// MaxQueuedPerAgent is how many more requests of an agent whose slots
	// are all taken wait for one, in order of arrival, each at most
	// QueueWait, before a 429 (CLLAMA_MAX_QUEUED_PER_AGENT /
	// -max-queued-per-agent, CLLAMA_QUEUE_WAIT / -queue-wait). Other
	// agents never wait for them: every agent has slots of its own.
	MaxQueuedPerAgent int
	QueueWait         time.Duration
	// MCPMaxBodyBytes bounds a request body on /mcp; larger is a 413
	// (CLLAMA_MCP_MAX_BODY_BYTES / -mcp-max-body-bytes). At most
	// MaxBodyBytes; zero means DefaultMCPMaxBodyBytes, or MaxBodyBytes
	// when smaller.
	MCPMaxBodyBytes int64
	// MCPMaxSessions bounds one agent's open MCP sessions on /mcp; one
	// more closes its least recently used (CLLAMA_MCP_MAX_SESSIONS /
	// -mcp-max-sessions, default 16). MCPSessionIdle closes a session
	// unused that long (CLLAMA_MCP_SESSION_IDLE / -mcp-session-idle,
	// default 30m).
	MCPMaxSessions int
	MCPSessionIdle time.Duration
	// MetricsAddr, when set, is where cllama serves Prometheus metrics,
	// on a listener of its own (CLLAMA_METRICS_ADDR / -metrics-addr;
	// default off).
	MetricsAddr string
	// AdminAddr, when set, is where cllama serves the operator's admin
	// listener (approvals, the console), on a listener of its own
	// (CLLAMA_ADMIN_ADDR / -admin-addr; default off). It needs the
	// operator token: AdminToken (CLLAMA_ADMIN_TOKEN) or the file
	// AdminTokenFile (CLLAMA_ADMIN_TOKEN_FILE / -admin-token-file).
	AdminAddr      string
	AdminToken     string
	AdminTokenFile string
	// StateURL, when set, keeps continuity in Redis, shared by cllama
	// replicas (CLLAMA_STATE_URL / -state-url, redis://host:port[/db]).
	StateURL string
	// ReplicaID names this replica's history files
	// (history.<replica>.jsonl) when several cllamas share one history
	// directory (CLLAMA_REPLICA_ID / -replica-id; default with StateURL:
	// the host name; else none, history.jsonl).
	ReplicaID string
	// FirstByteTimeout bounds the wait for the upstream's response headers
	// (CLLAMA_FIRST_BYTE_TIMEOUT / -first-byte-timeout). Non-streaming
	// generations answer only when done, hence the generous default.
	FirstByteTimeout time.Duration
	// StreamIdleTimeout bounds the silence between two reads of an upstream
	// body (CLLAMA_STREAM_IDLE_TIMEOUT / -stream-idle-timeout).
	StreamIdleTimeout time.Duration
	// BodyReadTimeout bounds reading the runner's request body, on every
	// route (CLLAMA_BODY_READ_TIMEOUT / -body-read-timeout).
	BodyReadTimeout time.Duration
	// ReadHeaderTimeout bounds reading a request's header
	// (CLLAMA_READ_HEADER_TIMEOUT / -read-header-timeout), IdleTimeout a
	// kept-alive connection's wait for its next request
	// (CLLAMA_IDLE_TIMEOUT / -idle-timeout).
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// CircuitFailures is how many failures in a row (5xx, connection
	// errors, first-byte timeouts) open a provider's or a key's circuit
	// (CLLAMA_CIRCUIT_FAILURES / -circuit-failures, default
	// keypool.DefaultCircuitFailures); CircuitOpen how long it stays
	// open, its requests going to the fallback, before one probe
	// (CLLAMA_CIRCUIT_OPEN / -circuit-open, default
	// keypool.DefaultCircuitOpen).
	CircuitFailures int
	CircuitOpen     time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM
	// (CLLAMA_SHUTDOWN_TIMEOUT / -shutdown-timeout).
	ShutdownTimeout time.Duration

	// HistoryFsync is when session history reaches stable storage:
	// "always" (before each exchange completes), "never", or an interval
	// (CLLAMA_HISTORY_FSYNC / -history-fsync, default DefaultHistoryFsync).
	HistoryFsync string
	// HistoryFiles is how many files one agent's history may be spread
	// over when its exchanges are recorded faster than one file takes
	// them (history.WriterOptions.Files) (CLLAMA_HISTORY_FILES /
	// -history-files; 0, the default, means HistoryFilesAuto).
	HistoryFiles int
	// UpstreamClient is the HTTP client of cleartext upstreams (pod model
	// servers, tool services): "h1" (internal/h1, the default: requests
	// written and read on the caller's goroutine) or "net/http" (Go's
	// Transport for every upstream, the operator's way back should h1
	// misbehave) (CLLAMA_UPSTREAM_CLIENT / -upstream-client).
	UpstreamClient string
	// DefaultProvider serves models named without a "<provider>/" prefix
	// on an endpoint whose format names no provider of its own (OpenAI
	// chat completions), and whole model names with an unknown prefix
	// when it is an aggregator (CLLAMA_DEFAULT_PROVIDER /
	// -default-provider; empty: none, such names are refused).
	DefaultProvider string
	// FormatProviders overrides, per format name, the provider bare
	// models of that format's endpoint go to (CLLAMA_<FORMAT>_PROVIDER,
	// e.g. CLLAMA_ANTHROPIC_PROVIDER=claude-proxy).
	FormatProviders map[string]string

	// ProviderEnv holds the <NAME>_API_KEY and <NAME>_BASE_URL variables,
	// keyed by lower-case provider name.
	ProviderEnv map[string]ProviderEnv
}

// ProviderEnv is one provider's settings from the environment.
type ProviderEnv struct {
	APIKey  string
	BaseURL string
}

// DefaultConfig returns the defaults, with no providers.
func DefaultConfig() Config {
	return Config{
		ListenAddr:          DefaultListenAddr,
		ContextRoot:         DefaultContextRoot,
		AuthDir:             DefaultAuthDir,
		MaxBodyBytes:        DefaultMaxBodyBytes,
		MaxAgentConcurrency: DefaultMaxAgentConcurrency,
		MaxQueuedPerAgent:   DefaultMaxQueuedPerAgent,
		QueueWait:           DefaultQueueWait,
		FirstByteTimeout:    DefaultFirstByteTimeout,
		StreamIdleTimeout:   DefaultStreamIdleTimeout,
		BodyReadTimeout:     DefaultBodyReadTimeout,
		ReadHeaderTimeout:   DefaultReadHeaderTimeout,
		IdleTimeout:         DefaultIdleTimeout,
		ShutdownTimeout:     DefaultShutdownTimeout,
		HistoryFsync:        DefaultHistoryFsync,
		UpstreamClient:      UpstreamH1,
		StoredIDsMax:        DefaultStoredIDsMax,
		CircuitFailures:     keypool.DefaultCircuitFailures,
		CircuitOpen:         keypool.DefaultCircuitOpen,
		ProviderEnv:         map[string]ProviderEnv{},
	}
}

// withDefaults fills zero fields, so a Config built by hand in a test needs
// only the fields it cares about.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.MaxInflightBytes <= 0 {
		c.MaxInflightBytes = InflightBodies * c.MaxBodyBytes
	}
	if c.MaxAgentInflightBytes <= 0 {
		c.MaxAgentInflightBytes = max(c.MaxInflightBytes/AgentInflightShare, c.MaxBodyBytes)
	}
	if c.MCPMaxBodyBytes <= 0 {
		c.MCPMaxBodyBytes = min(DefaultMCPMaxBodyBytes, c.MaxBodyBytes)
	}
	if c.MaxAgentConcurrency <= 0 {
		c.MaxAgentConcurrency = d.MaxAgentConcurrency
	}
	if c.MaxQueuedPerAgent <= 0 {
		c.MaxQueuedPerAgent = d.MaxQueuedPerAgent
	}
	if c.QueueWait <= 0 {
		c.QueueWait = d.QueueWait
	}
	if c.FirstByteTimeout <= 0 {
		c.FirstByteTimeout = d.FirstByteTimeout
	}
	if c.StreamIdleTimeout <= 0 {
		c.StreamIdleTimeout = d.StreamIdleTimeout
	}
	if c.BodyReadTimeout <= 0 {
		c.BodyReadTimeout = d.BodyReadTimeout
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = d.ShutdownTimeout
	}
	if c.StoredIDsMax <= 0 {
		c.StoredIDsMax = d.StoredIDsMax
	}
	if c.HistoryFsync == "" {
		c.HistoryFsync = d.HistoryFsync
	}
	return c
}

// LoadConfig builds the Config from environ (os.Environ form, "K=V") and
// the command-line args (without the program name). Flags override the
// environment, which overrides the defaults. Usage goes to usage.
func LoadConfig(args, environ []string, usage io.Writer) (Config, error) {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	c := DefaultConfig()
	str := func(dst *string, key string) {
		if v, ok := env[key]; ok && v != "" {
			*dst = v
		}
	}
	str(&c.ListenAddr, "LISTEN_ADDR")
	str(&c.ContextRoot, "CLAW_CONTEXT_ROOT")
	str(&c.AuthDir, "CLAW_AUTH_DIR")
	str(&c.HistoryDir, "CLAW_SESSION_HISTORY_DIR")
	str(&c.Pod, "CLAW_POD")
	str(&c.StateDir, "CLLAMA_STATE_DIR")
	str(&c.HistoryFsync, "CLLAMA_HISTORY_FSYNC")
	str(&c.UpstreamClient, "CLLAMA_UPSTREAM_CLIENT")
	str(&c.DefaultProvider, "CLLAMA_DEFAULT_PROVIDER")
	str(&c.MetricsAddr, "CLLAMA_METRICS_ADDR")
	str(&c.AdminAddr, "CLLAMA_ADMIN_ADDR")
	str(&c.AdminToken, "CLLAMA_ADMIN_TOKEN")
	str(&c.AdminTokenFile, "CLLAMA_ADMIN_TOKEN_FILE")
	str(&c.StateURL, "CLLAMA_STATE_URL")
	str(&c.ReplicaID, "CLLAMA_REPLICA_ID")

	var errs []error
	size := func(dst *int64, key string) {
		if v := env[key]; v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s: %q must be a positive number of bytes", key, v))
			}
			*dst = n
		}
	}
	size(&c.MaxBodyBytes, "CLLAMA_MAX_BODY_BYTES")
	size(&c.MaxInflightBytes, "CLLAMA_MAX_INFLIGHT_BYTES")
	size(&c.MaxAgentInflightBytes, "CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT")
	size(&c.MCPMaxBodyBytes, "CLLAMA_MCP_MAX_BODY_BYTES")
	size(&c.ContinuityMaxBytes, "CLLAMA_CONTINUITY_MAX_BYTES")
	size(&c.ContinuityMaxEntryBytes, "CLLAMA_CONTINUITY_MAX_ENTRY_BYTES")
	size(&c.ResultMaxBytes, "CLLAMA_RESULT_MAX_BYTES")
	size(&c.ResultStoreAgentBytes, "CLLAMA_RESULT_STORE_AGENT_BYTES")
	size(&c.ResultStoreBytes, "CLLAMA_RESULT_STORE_BYTES")
	count := func(dst *int, key string) {
		if v := env[key]; v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s: %q must be a positive number", key, v))
			}
			*dst = n
		}
	}
	count(&c.StoredIDsMax, "CLLAMA_STORED_IDS_MAX")
	count(&c.MaxAgentConcurrency, "CLLAMA_MAX_CONCURRENT_PER_AGENT")
	count(&c.MaxQueuedPerAgent, "CLLAMA_MAX_QUEUED_PER_AGENT")
	count(&c.MCPMaxSessions, "CLLAMA_MCP_MAX_SESSIONS")
	count(&c.CircuitFailures, "CLLAMA_CIRCUIT_FAILURES")
	count(&c.HistoryFiles, "CLLAMA_HISTORY_FILES")
	dur := func(dst *time.Duration, key string) {
		if v := env[key]; v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s: %q must be a positive duration such as 90s or 5m", key, v))
			}
			*dst = d
		}
	}
	dur(&c.FirstByteTimeout, "CLLAMA_FIRST_BYTE_TIMEOUT")
	dur(&c.StreamIdleTimeout, "CLLAMA_STREAM_IDLE_TIMEOUT")
	dur(&c.BodyReadTimeout, "CLLAMA_BODY_READ_TIMEOUT")
	dur(&c.QueueWait, "CLLAMA_QUEUE_WAIT")
	dur(&c.ReadHeaderTimeout, "CLLAMA_READ_HEADER_TIMEOUT")
	dur(&c.IdleTimeout, "CLLAMA_IDLE_TIMEOUT")
	dur(&c.ShutdownTimeout, "CLLAMA_SHUTDOWN_TIMEOUT")
	dur(&c.MCPSessionIdle, "CLLAMA_MCP_SESSION_IDLE")
	dur(&c.CircuitOpen, "CLLAMA_CIRCUIT_OPEN")
	if err := errors.Join(errs...); err != nil {
		return c, err
	}

	for k, v := range env {
		if v == "" {
			continue
		}
		if name, ok := strings.CutPrefix(k, "CLLAMA_"); ok {
			if format, ok := strings.CutSuffix(name, "_PROVIDER"); ok && format != "" && format != "DEFAULT" {
				if c.FormatProviders == nil {
					c.FormatProviders = map[string]string{}
				}
				c.FormatProviders[strings.ToLower(format)] = strings.ToLower(v)
			}
			continue
		}
		if name, ok := strings.CutSuffix(k, "_API_KEY"); ok && name != "" {
			pe := c.ProviderEnv[strings.ToLower(name)]
			pe.APIKey = v
			c.ProviderEnv[strings.ToLower(name)] = pe
		}
		if name, ok := strings.CutSuffix(k, "_BASE_URL"); ok && name != "" {
			pe := c.ProviderEnv[strings.ToLower(name)]
			pe.BaseURL = v
			c.ProviderEnv[strings.ToLower(name)] = pe
		}
	}

	fs := flag.NewFlagSet("cllama", flag.ContinueOnError)
	fs.SetOutput(usage)
	c.flags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := errors.Join(c.checkBudgets(), c.checkAdmin()); err != nil {
		return c, err
	}
	if _, err := history.ParseSync(c.HistoryFsync); err != nil {
		return c, fmt.Errorf("CLLAMA_HISTORY_FSYNC / -history-fsync: %w", err)
	}
	if c.HistoryFiles < 0 || c.HistoryFiles > MaxHistoryFiles {
		return c, fmt.Errorf("CLLAMA_HISTORY_FILES / -history-files: %d is not between 1 and %d (or 0: one per four cores, at most %d)", c.HistoryFiles, MaxHistoryFiles, maxAutoHistoryFiles)
	}
	switch c.UpstreamClient {
	case UpstreamH1, UpstreamNetHTTP:
	default:
		return c, fmt.Errorf("CLLAMA_UPSTREAM_CLIENT / -upstream-client: %q is not a client; use %q (the default) or %q", c.UpstreamClient, UpstreamH1, UpstreamNetHTTP)
	}
	c.DefaultProvider = strings.ToLower(strings.TrimSpace(c.DefaultProvider))
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q; cllama takes flags only (see -h)", fs.Args())
	}
	switch {
	case c.MaxBodyBytes <= 0:
		return c, fmt.Errorf("-max-body-bytes: must be > 0")
	case c.ContinuityMaxBytes < 0, c.ContinuityMaxEntryBytes < 0:
		return c, fmt.Errorf("-continuity-max-bytes, -continuity-max-entry-bytes: must be >= 0")
	case c.ResultMaxBytes < 0, c.ResultStoreAgentBytes < 0, c.ResultStoreBytes < 0:
		return c, fmt.Errorf("-result-max-bytes, -result-store-agent-bytes, -result-store-bytes: must be >= 0")
	case c.StoredIDsMax <= 0:
		return c, fmt.Errorf("-stored-ids-max: must be > 0")
	case c.CircuitFailures <= 0:
		return c, fmt.Errorf("-circuit-failures: must be > 0")
	case c.CircuitOpen <= 0:
		return c, fmt.Errorf("-circuit-open: must be > 0")
	case c.FirstByteTimeout <= 0, c.StreamIdleTimeout <= 0, c.BodyReadTimeout <= 0, c.ShutdownTimeout <= 0,
		c.ReadHeaderTimeout <= 0, c.IdleTimeout <= 0:
		return c, fmt.Errorf("timeouts must be > 0")
	}
	return c, nil
}

// checkAdmin checks that an admin listener has exactly one operator
// token source.
func (c *Config) checkAdmin() error {
	if c.AdminAddr != "" && c.AdminToken == "" && c.AdminTokenFile == "" {
		return fmt.Errorf("CLLAMA_ADMIN_ADDR / -admin-addr is set but no operator token is: set CLLAMA_ADMIN_TOKEN_FILE (claw up writes .claw-auth/operator-token) or CLLAMA_ADMIN_TOKEN")
	}
	if c.AdminToken != "" && c.AdminTokenFile != "" {
		return fmt.Errorf("CLLAMA_ADMIN_TOKEN and CLLAMA_ADMIN_TOKEN_FILE are both set; keep one")
	}
	return nil
}

// checkBudgets checks that the body bounds a setting gives can each admit a
// body of the size the next one accepts.
func (c Config) checkBudgets() error {
	if c.MaxInflightBytes > 0 && c.MaxInflightBytes < c.MaxBodyBytes {
		return fmt.Errorf("CLLAMA_MAX_INFLIGHT_BYTES / -max-inflight-bytes: %d is less than CLLAMA_MAX_BODY_BYTES (%d), so a request of the largest accepted size could never be admitted; raise it or lower the body limit", c.MaxInflightBytes, c.MaxBodyBytes)
	}
	if c.MaxAgentInflightBytes > 0 && c.MaxAgentInflightBytes < c.MaxBodyBytes {
		return fmt.Errorf("CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT / -max-inflight-bytes-per-agent: %d is less than CLLAMA_MAX_BODY_BYTES (%d), so a request of the largest accepted size could never be admitted; raise it or lower the body limit", c.MaxAgentInflightBytes, c.MaxBodyBytes)
	}
	if budget := c.withDefaults().MaxInflightBytes; c.MaxAgentInflightBytes > budget {
		return fmt.Errorf("CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT / -max-inflight-bytes-per-agent: %d is more than the in-flight budget of all agents (%d, CLLAMA_MAX_INFLIGHT_BYTES)", c.MaxAgentInflightBytes, budget)
	}
	if c.MCPMaxBodyBytes > c.MaxBodyBytes {
		return fmt.Errorf("CLLAMA_MCP_MAX_BODY_BYTES / -mcp-max-body-bytes: %d is more than CLLAMA_MAX_BODY_BYTES (%d)", c.MCPMaxBodyBytes, c.MaxBodyBytes)
	}
	return nil
}

// flags defines on fs a flag for each setting, its default c's value.
func (c *Config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.ListenAddr, "listen", c.ListenAddr, "listen address (LISTEN_ADDR)")
	fs.StringVar(&c.ContextRoot, "context-root", c.ContextRoot, "per-agent context directory (CLAW_CONTEXT_ROOT)")
	fs.StringVar(&c.AuthDir, "auth-dir", c.AuthDir, "directory holding providers.json (CLAW_AUTH_DIR)")
	fs.StringVar(&c.HistoryDir, "history-dir", c.HistoryDir, "session history directory; empty disables history (CLAW_SESSION_HISTORY_DIR)")
	fs.StringVar(&c.Pod, "pod", c.Pod, "pod name (CLAW_POD)")
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "directory for state kept across restarts, e.g. tool-loop continuity (CLLAMA_STATE_DIR; default <history-dir>/.continuity)")
	fs.Int64Var(&c.ContinuityMaxBytes, "continuity-max-bytes", c.ContinuityMaxBytes, "total size of the continuity store; 0 means 64 MiB (CLLAMA_CONTINUITY_MAX_BYTES)")
	fs.Int64Var(&c.ResultMaxBytes, "result-max-bytes", c.ResultMaxBytes, "largest tool result kept whole behind a handle, a longer one cut; 0 means 64 MiB (CLLAMA_RESULT_MAX_BYTES)")
	fs.Int64Var(&c.ResultStoreAgentBytes, "result-store-agent-bytes", c.ResultStoreAgentBytes, "kept tool results one agent may hold, its oldest dropped beyond; 0 means 256 MiB (CLLAMA_RESULT_STORE_AGENT_BYTES)")
	fs.Int64Var(&c.ResultStoreBytes, "result-store-bytes", c.ResultStoreBytes, "kept tool results in all, the oldest dropped beyond; 0 means 1 GiB (CLLAMA_RESULT_STORE_BYTES)")
	fs.Int64Var(&c.ContinuityMaxEntryBytes, "continuity-max-entry-bytes", c.ContinuityMaxEntryBytes, "largest hidden transcript kept for one turn; 0 means 4 MiB (CLLAMA_CONTINUITY_MAX_ENTRY_BYTES)")
	fs.IntVar(&c.StoredIDsMax, "stored-ids-max", c.StoredIDsMax, "how many stored responses cllama remembers the owner of, oldest forgotten first (CLLAMA_STORED_IDS_MAX)")
	fs.StringVar(&c.DefaultProvider, "default-provider", c.DefaultProvider, "provider of models named without a \"<provider>/\" prefix (CLLAMA_DEFAULT_PROVIDER)")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest accepted request body (CLLAMA_MAX_BODY_BYTES)")
	fs.Int64Var(&c.MaxInflightBytes, "max-inflight-bytes", c.MaxInflightBytes, "request bodies all requests in progress may hold together, at least -max-body-bytes; 0 means 8 × -max-body-bytes (CLLAMA_MAX_INFLIGHT_BYTES)")
	fs.Int64Var(&c.MaxAgentInflightBytes, "max-inflight-bytes-per-agent", c.MaxAgentInflightBytes, "request bodies one agent's requests in progress may hold together, between -max-body-bytes and -max-inflight-bytes; 0 means a quarter of -max-inflight-bytes, at least -max-body-bytes (CLLAMA_MAX_INFLIGHT_BYTES_PER_AGENT)")
	fs.IntVar(&c.MaxAgentConcurrency, "max-concurrent-per-agent", c.MaxAgentConcurrency, "requests one agent may have in progress at once, on every route (CLLAMA_MAX_CONCURRENT_PER_AGENT)")
	fs.IntVar(&c.MaxQueuedPerAgent, "max-queued-per-agent", c.MaxQueuedPerAgent, "requests of an agent with every slot taken that wait for one before a 429 (CLLAMA_MAX_QUEUED_PER_AGENT)")
	fs.DurationVar(&c.QueueWait, "queue-wait", c.QueueWait, "longest a queued request waits for its agent's slot (CLLAMA_QUEUE_WAIT)")
	fs.Int64Var(&c.MCPMaxBodyBytes, "mcp-max-body-bytes", c.MCPMaxBodyBytes, "largest accepted request body on /mcp, at most -max-body-bytes; 0 means 4 MiB (CLLAMA_MCP_MAX_BODY_BYTES)")
	fs.StringVar(&c.StateURL, "state-url", c.StateURL, "keep continuity in Redis, shared by cllama replicas: redis://host:port[/db] (CLLAMA_STATE_URL)")
	fs.StringVar(&c.ReplicaID, "replica-id", c.ReplicaID, "this replica's name in its history files, history.<id>.jsonl (CLLAMA_REPLICA_ID; default with -state-url: the host name)")
	fs.StringVar(&c.AdminAddr, "admin-addr", c.AdminAddr, "serve the operator's admin listener (approvals, console) at ADDR, e.g. :8081; empty: off (CLLAMA_ADMIN_ADDR)")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", c.AdminTokenFile, "file holding the operator token the admin listener requires (CLLAMA_ADMIN_TOKEN_FILE; or CLLAMA_ADMIN_TOKEN)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "serve Prometheus metrics at http://ADDR/metrics, e.g. :9090; empty: off (CLLAMA_METRICS_ADDR)")
	fs.IntVar(&c.MCPMaxSessions, "mcp-max-sessions", c.MCPMaxSessions, "MCP sessions one agent may hold open on /mcp, its least recently used closed beyond; 0 means 16 (CLLAMA_MCP_MAX_SESSIONS)")
	fs.DurationVar(&c.MCPSessionIdle, "mcp-session-idle", c.MCPSessionIdle, "close an MCP session unused this long; 0 means 30m (CLLAMA_MCP_SESSION_IDLE)")
	fs.DurationVar(&c.FirstByteTimeout, "first-byte-timeout", c.FirstByteTimeout, "wait for upstream response headers (CLLAMA_FIRST_BYTE_TIMEOUT)")
	fs.DurationVar(&c.StreamIdleTimeout, "stream-idle-timeout", c.StreamIdleTimeout, "longest silence of an upstream body (CLLAMA_STREAM_IDLE_TIMEOUT)")
	fs.DurationVar(&c.BodyReadTimeout, "body-read-timeout", c.BodyReadTimeout, "time allowed to read a request body (CLLAMA_BODY_READ_TIMEOUT)")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", c.ReadHeaderTimeout, "time allowed to read a request's header (CLLAMA_READ_HEADER_TIMEOUT)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "how long a kept-alive connection may wait for its next request (CLLAMA_IDLE_TIMEOUT)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "drain time for in-flight requests on SIGTERM (CLLAMA_SHUTDOWN_TIMEOUT)")
	fs.StringVar(&c.UpstreamClient, "upstream-client", c.UpstreamClient, "HTTP client of cleartext upstreams: h1 or net/http (CLLAMA_UPSTREAM_CLIENT)")
	fs.IntVar(&c.CircuitFailures, "circuit-failures", c.CircuitFailures, "failures in a row (5xx, connection errors, first-byte timeouts) that open a provider's or a key's circuit (CLLAMA_CIRCUIT_FAILURES)")
	fs.DurationVar(&c.CircuitOpen, "circuit-open", c.CircuitOpen, "how long an open circuit sends requests to the fallback before one probe (CLLAMA_CIRCUIT_OPEN)")
	fs.StringVar(&c.HistoryFsync, "history-fsync", c.HistoryFsync, "when history reaches stable storage: always, never, or an interval such as 1s (CLLAMA_HISTORY_FSYNC)")
	fs.IntVar(&c.HistoryFiles, "history-files", c.HistoryFiles, "files one agent's history may be spread over when it is recorded faster than one file takes it; 0 means one per four cores, at most 8 (CLLAMA_HISTORY_FILES)")
}

// ContinuityDir is where cllama keeps state across restarts (the mediation
// loop's continuity, the owners of stored responses): StateDir,
// else <HistoryDir>/.continuity (a name no agent id can take, since ids
// cannot start with a dot), else "" (memory only).
func (c Config) ContinuityDir() string {
	switch {
	case c.StateDir != "":
		return c.StateDir
	case c.HistoryDir != "":
		return filepath.Join(c.HistoryDir, ".continuity")
	}
	return ""
}

// MaxHistoryFiles bounds HistoryFiles.
const MaxHistoryFiles = 64

// maxAutoHistoryFiles bounds HistoryFilesAuto.
const maxAutoHistoryFiles = 8

// HistoryFilesAuto is how many files one agent's history may be spread
// over unless configured: one per four cores (GOMAXPROCS), at least one
// and at most eight. The kernel takes one write to a file at a time, so
// one file bounds an agent's history to what one core copies into the
// page cache (about 1.2 GB/s on a 16-core machine, below what a proxy on
// its other cores receives); on a machine of a few cores the one file is
// not the bound.
func HistoryFilesAuto() int {
	return min(max(runtime.GOMAXPROCS(0)/4, 1), maxAutoHistoryFiles)
}

// HistoryFilesOrAuto is HistoryFiles, or HistoryFilesAuto when it is 0.
func (c Config) HistoryFilesOrAuto() int {
	if c.HistoryFiles > 0 {
		return c.HistoryFiles
	}
	return HistoryFilesAuto()
}

// HistoryReplica is the name of this replica's history files
// (history.<replica>.jsonl): ReplicaID, else, with StateURL (replicas
// share the history directory: one file each), the host name, else ""
// (history.jsonl).
func (c Config) HistoryReplica() string {
	if c.ReplicaID != "" || c.StateURL == "" {
		return c.ReplicaID
	}
	h, _ := os.Hostname()
	return h
}
