package testproc

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"
)

// Redis starts a redis-server of its own on a free loopback port, with
// no persistence, stopped when tb ends, and returns its URL
// (redis://127.0.0.1:PORT/0); extra are more redis-server arguments.
// Without redis-server the test is skipped, saying how to install it.
func Redis(tb testing.TB, extra ...string) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server is not installed (apt-get install redis-server); .ci/run installs it")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args := append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tb.TempDir()}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "redis://" + addr + "/0"
		}
	}
	tb.Fatal("redis-server did not start")
	return ""
}
