// Command claw-model is a scripted model provider: an HTTP server speaking
// OpenAI chat completions, the OpenAI Responses API and Anthropic messages
// that answers from a script file instead of a model, for offline demos and
// pod tests. See docs/scripted-model.md
// for the script format.
//
//	claw-model --script script.yaml [--addr :8080] [--log-requests requests.jsonl]
//
// SIGHUP reloads the script; SIGTERM or SIGINT shuts down.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/clawdapus/clawgo/internal/modelsim"
	"github.com/clawdapus/clawgo/internal/version"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "-version" || os.Args[1] == "--version") {
		// Printed whatever the configuration says, as every binary of the
		// project does.
		fmt.Println(version.String("claw-model"))
		return
	}
	os.Exit(Main(os.Args[1:], os.Getenv, os.Stderr))
}

type options struct {
	script      string
	addr        string
	logRequests string
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	o := options{script: getenv("CLAW_MODEL_SCRIPT"), addr: getenv("CLAW_MODEL_ADDR"), logRequests: getenv("CLAW_MODEL_LOG_REQUESTS")}
	if o.addr == "" {
		o.addr = ":8080"
	}
	fs := flag.NewFlagSet("claw-model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.script, "script", o.script, "script file, YAML or JSON (env CLAW_MODEL_SCRIPT)")
	fs.StringVar(&o.addr, "addr", o.addr, "listen address (env CLAW_MODEL_ADDR)")
	fs.StringVar(&o.logRequests, "log-requests", o.logRequests, "append every request as a JSON line to this file (env CLAW_MODEL_LOG_REQUESTS)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.script == "" {
		return o, errors.New("no script: pass --script or set CLAW_MODEL_SCRIPT")
	}
	return o, nil
}

// Main runs the server until SIGTERM or SIGINT and returns the exit code.
func Main(args []string, getenv func(string) string, stderr io.Writer) int {
	o, err := parse(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "claw-model:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	script, err := modelsim.LoadScript(o.script)
	if err != nil {
		fmt.Fprintln(stderr, "claw-model:", err)
		return 2
	}
	opts := modelsim.Options{Script: script, Logger: logger}
	if o.logRequests != "" {
		f, err := os.OpenFile(o.logRequests, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(stderr, "claw-model:", err)
			return 2
		}
		defer f.Close()
		opts.RequestLog = f
	}
	srv, err := modelsim.NewServer(opts)
	if err != nil {
		fmt.Fprintln(stderr, "claw-model:", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go reloadOnHUP(ctx, o.script, srv, logger)

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.addr)
	if err != nil {
		logger.Error("listen", "err", err)
		return 1
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	logger.Info("claw-model listening", "addr", ln.Addr().String(), "script", o.script, "rules", len(script.Rules))
	select {
	case err = <-errc:
		logger.Error("serve", "err", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	return 0
}

func reloadOnHUP(ctx context.Context, path string, srv *modelsim.Server, logger *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			sc, err := modelsim.LoadScript(path)
			if err != nil {
				logger.Error("reload failed; keeping the old script", "err", err)
				continue
			}
			srv.SetScript(sc)
			logger.Info("script reloaded", "rules", len(sc.Rules))
		}
	}
}
