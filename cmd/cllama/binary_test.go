package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
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
	bin := filepath.Join(dir, "cllama")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	write(t, filepath.Join(dir, "context", "a", "metadata.json"), `{"token":"a:b"}`)
	cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "CLAW_CONTEXT_ROOT="+filepath.Join(dir, "context"), "CLAW_AUTH_DIR="+dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var addr string
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "listening on "); ok {
			addr, _, _ = strings.Cut(rest, " ")
			break
		}
	}
	if addr == "" {
		t.Fatal("no listening line")
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health %d", resp.StatusCode)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for lines.Scan() { // until the process closes stderr
		rest.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, rest.String())
	}
	if !strings.Contains(rest.String(), "shutting down") {
		t.Fatalf("stderr: %s", rest.String())
	}
}
