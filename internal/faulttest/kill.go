package faulttest

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// KillLoop configures KillRuns.
type KillLoop struct {
	// Helper is the -test.run pattern of the test that, in the re-run test
	// binary, writes under load and prints "ACK <id>" once a write is
	// acknowledged.
	Helper string
	// Env are the helper's variables for run gen (it tells the helper it is
	// one, and where to write).
	Env func(gen int) []string
	// Runs is how many times the helper is started and killed.
	Runs int
	// KillAt is after how many acknowledgements run gen is killed.
	KillAt func(gen int) int
	// Kill kills the helper; default p.Kill() at once.
	Kill func(p *os.Process)
}

// KillRuns re-runs the test binary as o.Helper o.Runs times, kills each run
// with SIGKILL after o.KillAt(gen) acknowledgements, and returns every id
// acknowledged, in order. A run that ends other than by the kill fails the
// test. A binary it cannot re-run skips the test.
func KillRuns(t *testing.T, o KillLoop) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skip("cannot find the test binary to re-run:", err)
	}
	kill := o.Kill
	if kill == nil {
		kill = func(p *os.Process) {
			if err := p.Kill(); err != nil {
				t.Error(err)
			}
		}
	}
	var acked []string
	for gen := range o.Runs {
		cmd := exec.Command(exe, "-test.run="+o.Helper, "-test.count=1")
		cmd.Env = append(os.Environ(), o.Env(gen)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAt, n := o.KillAt(gen), 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			id, ok := strings.CutPrefix(sc.Text(), "ACK ")
			if !ok {
				continue
			}
			acked = append(acked, id)
			if n++; n == killAt {
				kill(cmd.Process)
			}
		}
		werr := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: helper ended with %v before it was killed (%d acks): %s", gen, werr, n, stderr.String())
		}
	}
	return acked
}
