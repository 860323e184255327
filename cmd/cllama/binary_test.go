package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBinarySIGTERM builds the real binary, starts it as a container
// would, and checks that SIGTERM ends it cleanly (exit 0).
func TestBinarySIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildCllama(ctx, t, dir)
	write(t, filepath.Join(dir, "context", "a", "metadata.json"), `{"token":"a:b"}`)
	p := startCllama(ctx, t, bin, "CLAW_CONTEXT_ROOT="+filepath.Join(dir, "context"), "CLAW_AUTH_DIR="+dir)
	addr := p.addr
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health %d", resp.StatusCode)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, err := p.wait()
	if err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, rest)
	}
	if !strings.Contains(rest, "shutting down") {
		t.Fatalf("stderr: %s", rest)
	}
}
