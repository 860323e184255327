// Command claw-mcp-stdio runs a stdio MCP server as a child process and
// exposes it as a Streamable HTTP MCP endpoint inside the pod (spec 002,
// "Wrapping Stdio MCP Servers").
//
// Configuration comes from the environment (CLAW_MCP_STDIO_COMMAND,
// CLAW_MCP_STDIO_ARGS as a JSON array, CLAW_MCP_STDIO_ADDR,
// CLAW_MCP_STDIO_PATH, CLAW_MCP_STDIO_AUTH_TOKEN, CLAW_MCP_STDIO_CALL_TIMEOUT,
// CLAW_MCP_STDIO_MAX_BODY_BYTES); flags override it, and a command given
// after the flags overrides both:
//
//	claw-mcp-stdio -addr 127.0.0.1:8080 -- npx -y some-mcp-server
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/clawdapus/clawgo/internal/mcpstdio"
	"github.com/clawdapus/clawgo/internal/version"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Getenv, os.Stderr))
}

// stdout receives -version's line.
var stdout io.Writer = os.Stdout

// Main parses flags over the environment, runs the wrapper until SIGTERM or
// SIGINT, and returns the exit code.
func Main(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-version" || args[0] == "--version") {
		fmt.Fprintln(stdout, version.String("claw-mcp-stdio"))
		return 0
	}
	cfg, err := parse(args, getenv, stderr)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "claw-mcp-stdio:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	w, err := mcpstdio.New(cfg, logger)
	if err != nil {
		fmt.Fprintln(stderr, "claw-mcp-stdio:", err)
		return 2
	}
	// Signals become cancellation here and nowhere else.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := w.Run(ctx); err != nil {
		logger.Error("claw-mcp-stdio failed", "err", err)
		return 1
	}
	return 0
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (mcpstdio.Config, error) {
	cfg, err := mcpstdio.ConfigFromEnv(getenv)
	if err != nil {
		return cfg, err
	}
	fs := flag.NewFlagSet("claw-mcp-stdio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: claw-mcp-stdio [flags] [-- command [args...]]\n       claw-mcp-stdio -version")
		fs.PrintDefaults()
	}
	command := fs.String("command", cfg.Command, "stdio MCP server command (env "+mcpstdio.EnvCommand+")")
	argsJSON := fs.String("args", "", "command arguments as a JSON array (env "+mcpstdio.EnvArgs+")")
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address, default :8080 (env "+mcpstdio.EnvAddr+")")
	fs.StringVar(&cfg.Path, "path", cfg.Path, "MCP endpoint path, default /mcp (env "+mcpstdio.EnvPath+")")
	fs.DurationVar(&cfg.CallTimeout, "call-timeout", cfg.CallTimeout, "per-call timeout, default 60s (env "+mcpstdio.EnvCallTimeout+")")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", cfg.MaxBodyBytes, "largest accepted request body, default 4 MiB (env "+mcpstdio.EnvMaxBody+")")
	fs.DurationVar(&cfg.BackoffMax, "max-backoff", cfg.BackoffMax, "longest delay between restarts, default 10s")
	// The token is deliberately not a flag: flags show up in process lists.
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.Command = *command
	if *argsJSON != "" {
		cfg.Args = nil
		if err := json.Unmarshal([]byte(*argsJSON), &cfg.Args); err != nil {
			return cfg, fmt.Errorf("-args must be a JSON array of strings: %w", err)
		}
	}
	if rest := fs.Args(); len(rest) > 0 {
		cfg.Command, cfg.Args = rest[0], rest[1:]
	}
	return cfg, nil
}
