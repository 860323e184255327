// Package testproc starts the processes tests need: the running test
// binary again as a helper process (a server a benchmark measures from
// outside, so that its CPU is not counted with the client's), a
// redis-server of the test's own, a real headless Chromium for the
// console's browser tests. It is imported by tests only.
package testproc

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Helper starts this test binary again with env set to "1" and returns
// the fields of the first line it prints. The helper is told to stop
// (its stdin closes) when tb ends, and is waited for.
//
// The package under test runs the helper from an init function:
//
//	func init() {
//		if os.Getenv(env) == "1" {
//			os.Exit(serve()) // print the line, then read stdin to its end
//		}
//	}
func Helper(tb testing.TB, env string) []string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Skip("no test binary to start again:", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("helper process: %v", err)
	}
	return strings.Fields(line)
}
