// Command claw is the operator's CLI for Clawdapus pods: it compiles a
// claw-pod.yml into per-agent governed context and runs the pod on Docker
// Compose. See `claw --help`.
package main

import (
	"context"
	"os"
)

func main() {
	// Signals are handled here, and only here: an interrupt cancels the
	// context, or goes to compose while it runs (see SignalRelay).
	ctx, cancel := context.WithCancel(context.Background())
	f := DefaultFactory()
	f.Signals = NewSignalRelay(cancel)
	code := Main(ctx, os.Args[1:], f)
	f.Signals.Stop()
	cancel()
	os.Exit(code)
}
