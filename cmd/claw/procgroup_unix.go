//go:build unix

package main

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// How compose gets exactly one interrupt per Ctrl-C.
//
// A terminal sends SIGINT to every process of its foreground process
// group. Were compose in claw's group, a Ctrl-C would reach it twice: from
// the terminal and forwarded by claw; compose reads the second as "press
// again to force" and kills every container (exit 137) instead of
// stopping them. Not forwarding SIGINT is no answer either: an interrupt
// sent to claw alone (kill -INT <pid>, a supervisor) would then never
// reach compose, and nothing tells claw which of the two it received.
//
// So compose always runs in a process group of its own, which no signal
// meant for claw's group reaches, and claw forwards each SIGINT and
// SIGTERM it receives exactly once (SignalRelay). When claw runs
// interactively — its standard input and output are its controlling
// terminal, and its group is the terminal's foreground — compose's group
// becomes the foreground instead, as a shell does for a job: Ctrl-C then
// reaches compose alone, once per press (the first stops the pod
// gracefully, a second forces, as with compose run by hand), compose keeps
// the terminal for its prompts and its interactive output, and claw, which
// no longer receives the terminal's signals, forwards only those sent to
// it. claw takes the foreground back when compose exits. Otherwise (no
// terminal, claw in the background, or output into a pipe whose reader,
// such as a pager, needs the terminal) the terminal's signals keep going
// to claw's group and claw forwards them; compose, in a background group,
// then reads nothing from the terminal (it would be stopped for it).

// composeGroup prepares cmd to run in its own process group.
type composeGroup struct {
	// tty is the controlling terminal handed to compose, nil when none.
	tty *os.File
}

// newComposeGroup sets cmd's process attributes: a new process group,
// made the terminal's foreground when claw runs interactively.
func newComposeGroup(cmd *exec.Cmd) *composeGroup {
	g := &composeGroup{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, inTTY := foregroundTerminal(cmd.Stdin)
	_, outTTY := foregroundTerminal(cmd.Stdout)
	if inTTY && outTTY {
		g.tty = in
		cmd.SysProcAttr = &syscall.SysProcAttr{Foreground: true, Ctty: int(in.Fd())}
		return g
	}
	if isTerminal(cmd.Stdin) {
		cmd.Stdin = nil // the null device
	}
	return g
}

// foregroundTerminal reports whether r is claw's controlling terminal with
// claw's process group in its foreground.
func foregroundTerminal(r any) (*os.File, bool) {
	f, ok := r.(*os.File)
	if !ok || f == nil {
		return nil, false
	}
	// TIOCGPGRP fails unless f is the caller's controlling terminal.
	fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return f, err == nil && fg == unix.Getpgrp()
}

// isTerminal reports whether r is a terminal.
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok || f == nil {
		return false
	}
	_, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil
}

// restore gives the terminal back to claw's process group after compose
// exited. claw is then in a background group, where changing the
// foreground would stop it with SIGTTOU unless that signal is ignored.
func (g *composeGroup) restore() {
	if g.tty == nil {
		return
	}
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(int(g.tty.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
	g.tty = nil
}
