package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// buildCllama builds the binary under test into dir, with the race
// detector when the tests run with it.
func buildCllama(ctx context.Context, t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "cllama")
	args := append(append([]string{"build"}, raceFlags...), "-o", bin, ".")
	if out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// cllamaProc is a running cllama binary listening on a free loopback port.
type cllamaProc struct {
	cmd  *exec.Cmd
	addr string
	// stderr is what it wrote after its listening line, until it closed
	// stderr: complete once done is closed (mu guards it until then).
	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}
}

// stderrNow is what the process has written to stderr so far, after its
// listening line.
func (p *cllamaProc) stderrNow() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startCllama starts bin with env added to this process's environment and
// waits for its listening line. It is killed at the end of the test if
// still running.
func startCllama(ctx context.Context, t testing.TB, bin string, env ...string) *cllamaProc {
	t.Helper()
	return startCllamaTo(ctx, t, bin, io.Discard, env...)
}

// startCllamaTo is startCllama with the audit log (stdout) going to
// stdout.
func startCllamaTo(ctx context.Context, t testing.TB, bin string, stdout io.Writer, env ...string) *cllamaProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &cllamaProc{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done; _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "listening on "); ok {
			p.addr, _, _ = strings.Cut(rest, " ")
			break
		}
	}
	go func() {
		for lines.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(lines.Text() + "\n")
			p.mu.Unlock()
		}
		close(p.done)
	}()
	if p.addr == "" {
		t.Fatal("cllama printed no listening line")
	}
	return p
}

// wait waits for the process to exit and returns the rest of its stderr.
func (p *cllamaProc) wait() (string, error) {
	<-p.done
	err := p.cmd.Wait()
	return p.stderr.String(), err
}
