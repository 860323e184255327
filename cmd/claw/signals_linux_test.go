package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// interruptCompose stands in for compose under `claw up`. It records its
// process group, the terminal's foreground group and claw's group (from
// /proc), and every SIGINT and SIGTERM it receives, then behaves as
// docker-compose 1.29 does: the first interrupt stops the pod, taking a
// while; a second one during that time forces, which 1.29 reports with a
// line "2" and exit status 2. (A shell merges two signals that arrive
// together into one trap, so the groups, not the count, show whether a
// Ctrl-C would reach compose twice.)
const interruptCompose = `
rec=$(dirname "$0")/signals
n=0
trap 'echo INT >> "$rec"; n=$((n+1))' INT
trap 'echo TERM >> "$rec"; n=$((n+1))' TERM
set -- $(cat /proc/$$/stat); own=$5; fg=$8
set -- $(cat /proc/$PPID/stat); claw=$5
echo "ready $own $fg $claw" >> "$rec"
while [ $n -eq 0 ]; do sleep 0.05; done
echo "Gracefully stopping... (press Ctrl+C again to force)"
i=0
while [ $i -lt 20 ]; do
  if [ $n -gt 1 ]; then echo 2 >&2; exit 2; fi
  sleep 0.05; i=$((i+1))
done
echo stopped
`

// openPTY returns a new pseudo-terminal's master and slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pty: %v", err)
	}
	t.Cleanup(func() { master.Close(); slave.Close() })
	return master, slave
}

// composeGroups are the process groups compose saw: its own, the
// terminal's foreground group (-1 or 0 without a terminal), and claw's.
type composeGroups struct{ own, foreground, claw int }

// upUnderInterrupts runs `claw up` on a compiled pod with the interrupt
// compose, starting claw with start (which sets its process attributes
// and streams), then calls interrupt(claw) once compose is ready. It
// returns the signals compose received, its process groups and claw's
// exit code.
func upUnderInterrupts(t *testing.T, start func(*exec.Cmd), interrupt func(*exec.Cmd)) (signals []string, groups composeGroups, code int) {
	t.Helper()
	dir := copyPod(t)
	compose, _ := fakeCompose(t, interruptCompose)
	rec := filepath.Join(filepath.Dir(compose), "signals")
	cmd := exec.Command(clawBinary(t), "up")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CLAW_COMPOSE="+compose, "DOCKER_HOST="+fakeDockerd(t, nil))
	start(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for {
		if data, _ := os.ReadFile(rec); bytes.HasPrefix(data, []byte("ready")) {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("compose never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	interrupt(cmd)
	select {
	case err := <-done:
		code = exitCode(err)
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("claw did not exit")
	}
	data, _ := os.ReadFile(rec)
	first, rest, _ := strings.Cut(string(data), "\n")
	if _, err := fmt.Sscanf(first, "ready %d %d %d", &groups.own, &groups.foreground, &groups.claw); err != nil {
		t.Fatalf("compose's record %q: %v", first, err)
	}
	return strings.Fields(rest), groups, code
}

// inTerminal starts claw as an interactive shell would: the session
// leader of a terminal, in its foreground process group. Its output is
// collected into out.
func inTerminal(t *testing.T, out *syncBuffer) (start func(*exec.Cmd), master *os.File) {
	master, slave := openPTY(t)
	go func() { _, _ = io.Copy(out, master) }()
	return func(cmd *exec.Cmd) {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}, master
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// pressCtrlC types Ctrl-C n times on the terminal: the terminal sends
// SIGINT to its foreground process group.
func pressCtrlC(t *testing.T, master *os.File, n int) func(*exec.Cmd) {
	return func(*exec.Cmd) {
		for i := range n {
			if i > 0 {
				time.Sleep(200 * time.Millisecond)
			}
			if _, err := master.Write([]byte{3}); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestCtrlCStopsGracefully: one Ctrl-C on a foreground `claw up` reaches
// compose exactly once (it stops the pod; nothing is killed), and claw
// exits 0 as compose does.
func TestCtrlCStopsGracefully(t *testing.T) {
	var out syncBuffer
	start, master := inTerminal(t, &out)
	signals, groups, code := upUnderInterrupts(t, start, pressCtrlC(t, master, 1))
	if groups.own == groups.claw || groups.own != groups.foreground {
		t.Errorf("compose runs in group %d, claw in %d, the terminal's foreground is %d: a Ctrl-C reaches compose twice", groups.own, groups.claw, groups.foreground)
	}
	if strings.Join(signals, " ") != "INT" || code != 0 {
		t.Fatalf("compose received %v, claw exited %d; output:\n%s", signals, code, out.String())
	}
}

// TestSecondCtrlCForces: a second Ctrl-C reaches compose, which forces;
// claw says so instead of passing on docker-compose's bare "2".
func TestSecondCtrlCForces(t *testing.T) {
	var out syncBuffer
	start, master := inTerminal(t, &out)
	signals, _, code := upUnderInterrupts(t, start, pressCtrlC(t, master, 2))
	if strings.Join(signals, " ") != "INT INT" || code != ExitFailure {
		t.Fatalf("compose received %v, claw exited %d; output:\n%s", signals, code, out.String())
	}
	time.Sleep(100 * time.Millisecond) // let the copy catch up
	text := strings.ReplaceAll(out.String(), "\r\n", "\n")
	if !strings.Contains(text, "stopped by force on a second interrupt") || strings.Contains(text, "\n2\n") {
		t.Fatalf("output:\n%s", text)
	}
}

// TestInterruptSentToClawAlone: an interrupt sent to claw's process only
// (kill -INT, kill -TERM) is forwarded to compose once, whether or not
// claw holds a terminal.
func TestInterruptSentToClawAlone(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		want := map[syscall.Signal]string{syscall.SIGINT: "INT", syscall.SIGTERM: "TERM"}[sig]
		send := func(cmd *exec.Cmd) { _ = cmd.Process.Signal(sig) }
		var out syncBuffer
		start, _ := inTerminal(t, &out)
		if signals, _, code := upUnderInterrupts(t, start, send); strings.Join(signals, " ") != want || code != 0 {
			t.Errorf("%v in a terminal: compose received %v, claw exited %d; output:\n%s", sig, signals, code, out.String())
		}
		var stderr bytes.Buffer
		detached := func(cmd *exec.Cmd) { cmd.Stderr = &stderr; cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
		if signals, _, code := upUnderInterrupts(t, detached, send); strings.Join(signals, " ") != want || code != 0 {
			t.Errorf("%v without a terminal: compose received %v, claw exited %d; stderr:\n%s", sig, signals, code, stderr.String())
		}
	}
}

// TestInterruptSentToClawsGroup: a signal to claw's whole process group
// (what a terminal or a supervisor does) still reaches compose once:
// compose runs in a group of its own, and claw forwards.
func TestInterruptSentToClawsGroup(t *testing.T) {
	var stderr bytes.Buffer
	detached := func(cmd *exec.Cmd) { cmd.Stderr = &stderr; cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
	toGroup := func(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	signals, groups, code := upUnderInterrupts(t, detached, toGroup)
	if groups.own == groups.claw {
		t.Errorf("compose runs in claw's process group %d: a signal to the group reaches it twice", groups.claw)
	}
	if strings.Join(signals, " ") != "INT" || code != 0 {
		t.Fatalf("compose received %v, claw exited %d; stderr:\n%s", signals, code, stderr.String())
	}
}

// TestTerminalGivenBack: after compose exits, the terminal's foreground is
// claw's process group again, so whatever runs next in it (the rest of a
// script, the shell) has the terminal.
func TestTerminalGivenBack(t *testing.T) {
	var out syncBuffer
	start, master := inTerminal(t, &out)
	after := filepath.Join(t.TempDir(), "after")
	var shellStart func(*exec.Cmd)
	shellStart = func(cmd *exec.Cmd) {
		start(cmd)
		// A script running claw, then reporting its own group and the
		// terminal's foreground group.
		script := `"$0" "$@"; set -- $(cat /proc/$$/stat); echo "$5 $8" > ` + after
		cmd.Args = append([]string{"sh", "-c", script, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = "/bin/sh"
	}
	if _, _, code := upUnderInterrupts(t, shellStart, pressCtrlC(t, master, 1)); code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, out.String())
	}
	var own, fg int
	data, _ := os.ReadFile(after)
	if _, err := fmt.Sscanf(string(data), "%d %d", &own, &fg); err != nil || own != fg {
		t.Fatalf("after claw: group %d, terminal foreground %d (%v); output:\n%s", own, fg, err, out.String())
	}
}

// TestComposeInterruptedOnCancel: a context cancelled for another reason
// than a signal interrupts compose once, and compose's own exit decides.
func TestComposeInterruptedOnCancel(t *testing.T) {
	compose, _ := fakeCompose(t, interruptCompose)
	rec := filepath.Join(filepath.Dir(compose), "signals")
	t.Setenv("CLAW_COMPOSE", compose)
	t.Setenv("DOCKER_HOST", fakeDockerd(t, nil))
	var out bytes.Buffer
	eng, err := NewComposeEngine(context.Background(), EngineConfig{Dir: t.TempDir(), File: "compose.generated.yml", Project: "p", IO: IOStreams{Out: &out, ErrOut: &out}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if data, _ := os.ReadFile(rec); bytes.HasPrefix(data, []byte("ready")) {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	if err := eng.Compose(ctx, "up"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	data, _ := os.ReadFile(rec)
	if _, rest, _ := strings.Cut(string(data), "\n"); strings.TrimSpace(rest) != "INT" {
		t.Fatalf("compose received %q", rest)
	}
	if err := eng.Compose(ctx, "ps"); !errors.Is(err, context.Canceled) {
		t.Fatalf("compose ran on a cancelled context: %v", err)
	}
}

// TestCtrlCWithOutputIntoAPipe: `claw up | tee log` (or a pager): the
// terminal stays with claw's group, where the pipe's reader may need it;
// a Ctrl-C reaches claw, which forwards it to compose once.
func TestCtrlCWithOutputIntoAPipe(t *testing.T) {
	var out syncBuffer
	start, master := inTerminal(t, &out)
	var piped bytes.Buffer
	pipedStart := func(cmd *exec.Cmd) {
		start(cmd)
		cmd.Stdout = &piped
	}
	signals, groups, code := upUnderInterrupts(t, pipedStart, pressCtrlC(t, master, 1))
	if groups.own == groups.claw || groups.own == groups.foreground || groups.foreground != groups.claw {
		t.Errorf("compose runs in group %d, claw in %d, the terminal's foreground is %d: the terminal should stay with claw", groups.own, groups.claw, groups.foreground)
	}
	if strings.Join(signals, " ") != "INT" || code != 0 {
		t.Fatalf("compose received %v, claw exited %d; output:\n%s%s", signals, code, out.String(), piped.String())
	}
}
