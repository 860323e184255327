package discover

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const wrapperName = "claw-mcp-stdio"

// findWrapper returns o.Wrapper, else claw-mcp-stdio next to the running
// executable, else the one on PATH.
func findWrapper(o Options) (string, error) {
	if o.Wrapper != "" {
		return o.Wrapper, nil
	}
	if exe, err := os.Executable(); err == nil {
		cand := filepath.Join(filepath.Dir(exe), wrapperName)
		if st, err := os.Stat(cand); err == nil && !st.IsDir() {
			return cand, nil
		}
	}
	if p, err := exec.LookPath(wrapperName); err == nil {
		return p, nil
	}
	return "", ErrWrapperNotFound
}

// startLocal runs the wrapper on the host on a free loopback port, in the
// pod directory (so relative commands resolve there), with the process
// environment plus the service's. It learns the port from the wrapper's
// "listening" log line.
func startLocal(ctx context.Context, t Target, o Options, logs *tail) (*running, error) {
	bin, err := findWrapper(o)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(lctx, bin, "-addr", "127.0.0.1:0")
	cmd.Dir = t.Dir
	env := t.wrapperEnv("")
	delete(env, envAddr)
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	// Stop politely: the wrapper then stops its child (close stdin,
	// SIGTERM, SIGKILL) before it exits.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopTimeout
	cmd.Stdout = logs
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		cancel()
		pw.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	r := &running{exited: make(chan struct{})}
	scanned := make(chan struct{})
	go func() {
		r.exitErr = cmd.Wait()
		pw.Close()
		// exited also means every line has reached logs.
		<-scanned
		close(r.exited)
	}()
	addr := make(chan string, 1)
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			logs.Write([]byte(line + "\n"))
			if !found && strings.Contains(line, "claw-mcp-stdio listening") {
				if a := logValue(line, "addr"); a != "" {
					found = true
					addr <- a
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	r.stop = func() error {
		cancel()
		select {
		case <-r.exited:
		case <-time.After(stopTimeout + 5*time.Second):
			return fmt.Errorf("the wrapper did not exit")
		}
		return nil
	}
	select {
	case a := <-addr:
		r.base = "http://" + a
		return r, nil
	case <-r.exited:
		return nil, fmt.Errorf("%s exited before listening: %v", bin, r.exitErr)
	case <-ctx.Done():
		_ = r.stop()
		return nil, fmt.Errorf("waiting for %s to listen: %w", bin, context.Cause(ctx))
	}
}

// logValue extracts key=value from a log/slog text line.
func logValue(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
