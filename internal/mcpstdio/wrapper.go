package mcpstdio

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Wrapper is one stdio MCP server exposed over Streamable HTTP. Create it
// with New, then call Run or Serve once.
type Wrapper struct {
	cfg    Config
	logger *slog.Logger
	server *mcp.Server
	mcp    *mcp.StreamableHTTPHandler
	sup    *supervisor
	posts  atomic.Int64 // MCP POST requests being served
}

// New validates cfg, fills its defaults and builds the wrapper. Nothing
// starts until Run or Serve.
func New(cfg Config, logger *slog.Logger) (*Wrapper, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w := &Wrapper{cfg: cfg, logger: logger}
	w.sup = newSupervisor(cfg, logger)
	w.server = mcp.NewServer(&mcp.Implementation{Name: "claw-mcp-stdio", Version: "0.1.0"}, &mcp.ServerOptions{
		Logger: logger,
		// Tools are always advertised, even before the child's first
		// listing, so a session opened early still learns of them through
		// list_changed. Resources and prompts are inferred once mirrored.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	w.server.AddReceivingMiddleware(w.awaitFirstListing)
	w.sup.mirror = newMirror(w.server, logger, w.sup.forward)
	w.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return w.server }, &mcp.StreamableHTTPOptions{
		Logger:              logger,
		SessionTimeout:      cfg.SessionIdleTimeout,
		MaxRequestBodyBytes: cfg.MaxBodyBytes,
	})
	return w, nil
}

// Config returns the effective configuration, defaults filled in.
func (w *Wrapper) Config() Config { return w.cfg }

// Health reports the child's state as /healthz does.
func (w *Wrapper) Health() Health { return w.sup.snapshot() }

// awaitFirstListing holds a session's first look at the lists until the
// child has been listed once (bounded by StartWait), so that `claw discover`
// started together with the wrapper does not record an empty tool list.
func (w *Wrapper) awaitFirstListing(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize", "server/discover", "tools/list", "resources/list", "resources/templates/list", "prompts/list":
			t := time.NewTimer(w.cfg.StartWait)
			select {
			case <-w.sup.synced:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		return next(ctx, method, req)
	}
}

// Run listens on Config.Addr and serves until ctx ends, then shuts down.
func (w *Wrapper) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", w.cfg.Addr)
	if err != nil {
		return err
	}
	return w.Serve(ctx, ln)
}

// shutdownGrace bounds how long in-flight HTTP requests may finish after
// ctx ends before their sessions are closed under them.
const shutdownGrace = 5 * time.Second

// sessionLinger is how long sessions outlive the last call in flight at
// shutdown.
const sessionLinger = 100 * time.Millisecond

// Serve starts the child and serves HTTP on ln until ctx ends. Shutdown
// order: stop accepting, let in-flight calls finish (bounded), close the
// MCP sessions (which ends their long-lived GET streams), then stop the
// child politely. Serve returns once the child has been reaped.
func (w *Wrapper) Serve(ctx context.Context, ln net.Listener) error {
	supCtx, stopSup := context.WithCancelCause(context.WithoutCancel(ctx))
	var supDone sync.WaitGroup
	supDone.Go(func() { w.sup.run(supCtx) })

	srv := &http.Server{
		Handler:           w.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return supCtx },
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	w.logger.Info("claw-mcp-stdio listening", "addr", ln.Addr().String(), "path", w.cfg.Path, "auth", w.cfg.AuthToken != "")

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	w.logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	shutDone := make(chan error, 1)
	go func() { shutDone <- srv.Shutdown(sctx) }()
	w.drain(sctx)
	// The last responses are written; their clients get a moment to read
	// them before the sessions' GET streams end (a client that does not
	// reconnect its stream fails the calls it is still waiting on when
	// the stream ends, even one whose answer is in its socket).
	select {
	case <-time.After(sessionLinger):
	case <-sctx.Done():
	}
	for ss := range w.server.Sessions() {
		ss.Close()
	}
	select {
	case <-shutDone:
	case <-sctx.Done():
		srv.Close()
	}
	stopSup(errors.New("wrapper shutting down"))
	supDone.Wait()
	w.logger.Info("stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// drain waits until no MCP POST is being served (so every call in flight
// has had its answer written), or for ctx.
func (w *Wrapper) drain(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for w.posts.Load() > 0 || w.sup.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
