// Command claw is the operator's CLI for Clawdapus pods: it compiles a
// claw-pod.yml into per-agent governed context and runs the pod on Docker
// Compose. See `claw --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Signals become cancellation here, and only here.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], DefaultFactory())
	stop()
	os.Exit(code)
}
