package mcpstdio

import (
	"context"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"
)

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func TestStopEscalatesToKill(t *testing.T) {
	// A child that ignores stdin EOF and SIGTERM must still be gone after
	// stop: that is what the final SIGKILL is for.
	cfg := Config{Command: "sh", Args: []string{"-c", "trap '' TERM; while :; do sleep 1; done"}}
	ch, err := startChild(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ch.stop(100 * time.Millisecond)
	if !isDone(ch.exited) {
		t.Fatal("child not reaped after stop")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stop took %v", d)
	}
	if r := ch.exitReason(); !strings.Contains(r, "killed") {
		t.Errorf("exit reason %q, want killed", r)
	}
}

func TestStartFailureIsAnError(t *testing.T) {
	_, err := startChild(context.Background(), Config{Command: "/nonexistent/claw-mcp-test"}, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("starting a missing command succeeded")
	}
}
