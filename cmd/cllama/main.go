// Command cllama is the governance proxy of a Clawdapus pod: every agent
// reaches its model providers only through it. Configuration comes from
// flags and the environment, read once here (see docs/cllama.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/proxy"
	_ "github.com/clawdapus/clawgo/internal/rtconfig" // before the other packages' initialisation
	"github.com/clawdapus/clawgo/internal/tracing"
	"github.com/clawdapus/clawgo/internal/version"
)

// isVersion reports a lone -version (or --version): print the build and
// exit, whatever the configuration says.
func isVersion(args []string) bool {
	return len(args) == 1 && (args[0] == "-version" || args[0] == "--version")
}

func main() {
	// The Go runtime's settings (GOGC=200 unless set, no allocation
	// profiling) are made by internal/rtconfig as it is initialised.
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is main without the process: the audit log goes to stdout, which is
// what `docker compose logs cllama` shows and `claw audit` reads;
// diagnostics go to stderr.
func run(args, environ []string, stdout, stderr io.Writer) int {
	if isHealthcheck(args) {
		return healthcheck(environ, stderr)
	}
	if isVersion(args) {
		fmt.Fprintln(stdout, version.String("cllama"))
		return 0
	}
	cfg, err := proxy.LoadConfig(args, environ, stderr)
	if errors.Is(err, flagHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "cllama: %v\n", err)
		return 2
	}
	// Signals become cancellation in exactly one place.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	getenv := func(k string) string {
		for _, kv := range environ {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v
			}
		}
		return ""
	}
	shutdownTraces, traced, err := tracing.Setup(ctx, cfg.Pod, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "cllama: OpenTelemetry (OTEL_EXPORTER_OTLP_*): %v\n", err)
		return 2
	}
	if traced {
		fmt.Fprintln(stderr, "cllama: traces exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)")
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := shutdownTraces(sctx); err != nil {
				fmt.Fprintf(stderr, "cllama: flushing traces: %v\n", err)
			}
		}()
	}
	if err := serve(ctx, cfg, audit.New(stdout), stderr); err != nil {
		fmt.Fprintf(stderr, "cllama: %v\n", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, cfg proxy.Config, aud *audit.Logger, stderr io.Writer) error {
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w (LISTEN_ADDR)", cfg.ListenAddr, err)
	}
	return serveOn(ctx, ln, cfg, aud, stderr, func() {
		// Not before the first request is accepted: giving the pages
		// back (a full collection, reading /proc/self/smaps, madvise over
		// the executable) took longer than everything else start-up does
		// once the packages are initialised. Once started, the listeners
		// and the stages' first timers have read pages of their own that
		// nothing reads again (about 5 MiB): they go too.
		time.AfterFunc(startSettle, func() {
			if _, err := releaseStartPages(); err != nil {
				fmt.Fprintf(stderr, "cllama: start-up pages stay resident: %v\n", err)
			}
		})
	})
}

// startSettle is how long after it is ready cllama gives back the pages
// that starting it read.
const startSettle = time.Second

// serveOn runs cllama on ln until ctx is cancelled, then drains. ready,
// when set, runs once everything is wired, before the first request is
// accepted.
func serveOn(ctx context.Context, ln net.Listener, cfg proxy.Config, aud *audit.Logger, stderr io.Writer, ready func()) error {
	defer ln.Close()
	st, err := wireStages(cfg, aud, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	st.opts.Idle = releaseIdlePages
	srv, err := proxy.New(cfg, st.opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if st.admin != nil {
		// The operator's console (docs/console.md) on the admin listener.
		stopConsole, err := startConsole(ctx, cfg, st, srv, st.admin, st.admin.TokenMatches, st.admin.Bearer, stderr)
		if err != nil {
			return err
		}
		defer stopConsole()
	}
	ln = framingListener{ln}
	hs := &http.Server{
		Handler:     closeAmbiguous(srv),
		ConnContext: framingContext,
		// No ReadTimeout or WriteTimeout: streams run for minutes. The
		// header read is bounded here, the body by the proxy itself
		// (CLLAMA_BODY_READ_TIMEOUT, on every route).
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	// Open MCP sessions hold event streams that would outlast any drain:
	// they are closed as the drain begins (clients reconnect elsewhere).
	if st.broker != nil {
		hs.RegisterOnShutdown(st.broker.Close)
	}
	if fi, err := os.Stat(cfg.ContextRoot); err != nil || !fi.IsDir() {
		fmt.Fprintf(stderr, "cllama: warning: context root %s is not a readable directory (CLAW_CONTEXT_ROOT); every agent will be refused\n", cfg.ContextRoot)
	}
	if ready != nil {
		ready()
	}
	fmt.Fprintf(stderr, "cllama: listening on %s (pod %q, context %s, providers: %s, history: %s)\n",
		ln.Addr(), cfg.Pod, cfg.ContextRoot, srv.Providers(), historyOf(cfg.HistoryDir, st.history.Files()))

	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	if st.metrics != nil {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w (CLLAMA_METRICS_ADDR)", cfg.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", st.metrics.Handler())
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		defer ms.Close()
		go func() {
			if err := ms.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("metrics listener: %w", err)
			}
		}()
		fmt.Fprintf(stderr, "cllama: metrics on http://%s/metrics\n", mln.Addr())
	}
	if st.admin != nil {
		aln, err := net.Listen("tcp", cfg.AdminAddr)
		if err != nil {
			return fmt.Errorf("listen %s: %w (CLLAMA_ADMIN_ADDR)", cfg.AdminAddr, err)
		}
		as := &http.Server{Handler: st.admin, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: cfg.IdleTimeout, MaxHeaderBytes: 64 << 10}
		defer as.Close()
		go func() {
			if err := as.Serve(aln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("admin listener: %w", err)
			}
		}()
		fmt.Fprintf(stderr, "cllama: admin listener on %s (operator token required)\n", aln.Addr())
		fmt.Fprintf(stderr, "cllama: console on http://%s/\n", aln.Addr())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(stderr, "cllama: shutting down, draining for up to %s\n", cfg.ShutdownTimeout)
	// Shutdown stops accepting and lets in-flight exchanges (streams
	// included) finish; past the deadline Close cuts them, which cancels
	// their upstream calls through the request contexts.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// historyOf says where history goes, and over how many files an agent's
// may be spread when more than one.
func historyOf(dir string, files int) string {
	if dir == "" || files <= 1 {
		return orOff(dir)
	}
	return fmt.Sprintf("%s, up to %d files per agent", dir, files)
}

func orOff(s string) string {
	if s == "" {
		return "off"
	}
	return s
}
