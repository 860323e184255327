// Command claw-mcp-echo is a tiny stdio MCP server with deterministic tools.
// It exists for tests and the offline demo: the stdio wrapper
// (cmd/claw-mcp-stdio) runs it as a child, and the example pod offers its
// tools to agents as managed tools.
//
// Tools: echo, add, lookup_symbol, slow. With -faults it also offers tools
// that misbehave on purpose (crash mid-call, print garbage to stdout, add a
// tool at run time) so the wrapper's recovery paths can be exercised.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	faults := flag.Bool("faults", false, "also offer the fault-injection tools crash, garbage and add_tool")
	garbageAtStart := flag.Bool("garbage-at-start", false, "write a non-JSON line to stdout before serving")
	exitAtStart := flag.Int("exit-at-start", -1, "exit with this status before serving (>= 0)")
	flag.Parse()

	// Logs go to stderr: stdout belongs to the protocol.
	logger := log.New(os.Stderr, "claw-mcp-echo: ", 0)
	out := &lockedWriter{w: os.Stdout}

	if *exitAtStart >= 0 {
		logger.Printf("exiting with status %d as asked", *exitAtStart)
		os.Exit(*exitAtStart)
	}
	if *garbageAtStart {
		fmt.Fprintln(out, "this is not JSON-RPC")
	}

	srv := newServer(logger, out, *faults)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger.Printf("serving on stdio (pid %d)", os.Getpid())
	err := srv.Run(ctx, &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{out}})
	if err != nil && ctx.Err() == nil {
		logger.Printf("stopped: %v", err)
	}
	logger.Printf("bye")
}

// lockedWriter serialises writes to stdout so the garbage tool cannot
// interleave with a protocol frame mid-line: the point of that tool is a
// clean, whole non-JSON line, which is what a misbehaving real server emits.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
