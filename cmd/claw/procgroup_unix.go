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
// SIGTERM it receives exactly once (SignalRelay). When claw runs in the
// terminal's foreground, compose's group becomes the foreground instead,
// as a shell does for a job: Ctrl-C then reaches compose alone, once per
// press (the first stops the pod gracefully, a second forces, as with
// compose run by hand), compose keeps the terminal for its prompts and
// output modes, and claw, which no longer receives the terminal's
// signals, forwards only those sent to it. claw takes the foreground
// back when compose exits.

// composeGroup prepares cmd to run in its own process group.
type composeGroup struct {
	tty *os.File
}

// newComposeGroup sets cmd's process attributes: a new process group,
// made the terminal's foreground group when claw's group holds it now.
func newComposeGroup(cmd *exec.Cmd) *composeGroup {
	g := &composeGroup{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return g // no controlling terminal
	}
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		tty.Close() // claw runs in the background: leave the terminal alone
		return g
	}
	g.tty = tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Foreground: true, Ctty: int(tty.Fd())}
	return g
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
	g.tty.Close()
	g.tty = nil
}
