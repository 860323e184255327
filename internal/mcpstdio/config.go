package mcpstdio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Config configures a Wrapper. The zero value of every field but Command
// means the default documented on it.
type Config struct {
	// Command is the stdio MCP server to run. Required.
	Command string
	// Args are passed to Command.
	Args []string
	// Env, when non-nil, replaces the child's environment; nil inherits the
	// wrapper's, which is how a sidecar hands its credentials to the child.
	Env []string
	// Dir is the child's working directory; empty means the wrapper's.
	Dir string

	// Addr is the listen address. Default ":8080".
	Addr string
	// Path is where the MCP endpoint is served. Default "/mcp".
	Path string
	// AuthToken, when set, must be presented as "Authorization: Bearer <token>"
	// on the MCP endpoint. /healthz stays open for container health checks.
	AuthToken string
	// MaxBodyBytes bounds an HTTP request body. Default 4 MiB.
	MaxBodyBytes int64

	// CallTimeout bounds one forwarded call (tools/call, resources/read,
	// prompts/get). Default 60s: above cllama's default per-tool timeout
	// (30s, spec 000) so the caller's own budget is the one that fires.
	CallTimeout time.Duration
	// StartWait is how long a request arriving while the child is (re)starting
	// waits for it before failing. Default 10s.
	StartWait time.Duration
	// InitTimeout bounds MCP initialize plus the first listing. Default 30s:
	// npx-style commands may download before they answer.
	InitTimeout time.Duration
	// BackoffInitial and BackoffMax shape restart delays: the delay doubles
	// after each failed run up to BackoffMax. Defaults 200ms and 10s.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// StableAfter is how long a child must stay up for the backoff to reset.
	// Default 30s.
	StableAfter time.Duration
	// StopGrace is each wait of the polite stop (after closing stdin, then
	// after SIGTERM) before escalating. Default 3s.
	StopGrace time.Duration
	// SessionIdleTimeout closes HTTP MCP sessions idle this long. Default 30m.
	SessionIdleTimeout time.Duration
}

// Environment variable names (issue 6; x-claw.mcp-stdio compiles into these).
const (
	EnvCommand     = "CLAW_MCP_STDIO_COMMAND"
	EnvArgs        = "CLAW_MCP_STDIO_ARGS"
	EnvAddr        = "CLAW_MCP_STDIO_ADDR"
	EnvPath        = "CLAW_MCP_STDIO_PATH"
	EnvAuthToken   = "CLAW_MCP_STDIO_AUTH_TOKEN"
	EnvCallTimeout = "CLAW_MCP_STDIO_CALL_TIMEOUT"
	EnvMaxBody     = "CLAW_MCP_STDIO_MAX_BODY_BYTES"
)

// ConfigFromEnv reads the CLAW_MCP_STDIO_* variables through getenv.
// Unset variables leave defaults in place.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Command:   getenv(EnvCommand),
		Addr:      getenv(EnvAddr),
		Path:      getenv(EnvPath),
		AuthToken: getenv(EnvAuthToken),
	}
	if raw := getenv(EnvArgs); raw != "" {
		if err := json.Unmarshal([]byte(raw), &c.Args); err != nil {
			return c, fmt.Errorf("%s must be a JSON array of strings: %w", EnvArgs, err)
		}
	}
	if raw := getenv(EnvCallTimeout); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("%s: want a positive duration like 30s, got %q", EnvCallTimeout, raw)
		}
		c.CallTimeout = d
	}
	if raw := getenv(EnvMaxBody); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("%s: want a positive byte count, got %q", EnvMaxBody, raw)
		}
		c.MaxBodyBytes = n
	}
	return c, nil
}

// withDefaults returns c with every zero field set to its default, or an
// error when c cannot work.
func (c Config) withDefaults() (Config, error) {
	if c.Command == "" {
		return c, errors.New("no command: set " + EnvCommand + " or pass the command after --")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Addr == "" {
		c.Addr = ":8080"
	}
	if c.Path == "" {
		c.Path = "/mcp"
	}
	if c.Path[0] != '/' {
		return c, fmt.Errorf("path %q must start with /", c.Path)
	}
	if c.Path == "/healthz" {
		return c, errors.New("path /healthz is reserved for health")
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 4 << 20
	}
	def(&c.CallTimeout, 60*time.Second)
	def(&c.StartWait, 10*time.Second)
	def(&c.InitTimeout, 30*time.Second)
	def(&c.BackoffInitial, 200*time.Millisecond)
	def(&c.BackoffMax, 10*time.Second)
	def(&c.StableAfter, 30*time.Second)
	def(&c.StopGrace, 3*time.Second)
	def(&c.SessionIdleTimeout, 30*time.Minute)
	if c.BackoffMax < c.BackoffInitial {
		c.BackoffMax = c.BackoffInitial
	}
	return c, nil
}
