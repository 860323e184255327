package mcpstdio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// child is one run of the stdio server process. The wrapper talks MCP over
// stdin/stdout; stderr goes to the log line by line.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end: newline-delimited JSON-RPC to the child
	stdout *os.File // our end: the child's JSON-RPC frames
	stderr *lineLogger
	// kill is the last resort of stop: cancelling the command's context
	// makes exec send SIGKILL (to the process group, see proc_*.go).
	kill context.CancelFunc
	// exited is closed once the process has been reaped; err is then its
	// exit status.
	exited chan struct{}
	err    error
}

// startChild starts cfg's command. The pipes are plain os.Pipe files rather
// than exec's StdinPipe/StdoutPipe so that reaping the process (cmd.Wait)
// never races with reading its output, and so that closing our ends unblocks
// any pending read or write (os.Pipe files use the runtime poller).
func startChild(ctx context.Context, cfg Config, logger *slog.Logger) (*child, error) {
	// The command's context is a kill switch owned by this child, detached
	// from ctx's cancellation: a shutdown must go through the polite stop,
	// not jump straight to SIGKILL.
	cctx, kill := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(cctx, cfg.Command, cfg.Args...)
	cmd.Env = cfg.Env
	cmd.Dir = cfg.Dir
	setProcessGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	// If a grandchild keeps stderr open after the child died, do not let
	// Wait block on it forever.
	cmd.WaitDelay = time.Second

	inR, inW, err := os.Pipe()
	if err != nil {
		kill()
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		kill()
		closeAll(inR, inW)
		return nil, err
	}
	c := &child{cmd: cmd, stdin: inW, stdout: outR, kill: kill, exited: make(chan struct{})}
	c.stderr = newLineLogger(logger)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, c.stderr
	if err := cmd.Start(); err != nil {
		kill()
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	// The child holds its own copies now; ours would keep the pipes open
	// after it exits and hide EOF.
	closeAll(inR, outW)
	c.stderr.setPID(cmd.Process.Pid)
	go func() {
		c.err = cmd.Wait()
		c.stderr.Flush()
		close(c.exited)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// exitReason describes how the process ended; call after exited is closed.
func (c *child) exitReason() string {
	if c.err == nil {
		return "exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	return c.err.Error()
}

// stop shuts the child down politely, as the MCP stdio transport asks:
// close its stdin, wait; SIGTERM, wait; SIGKILL. It returns once the process
// is reaped and our pipe ends are closed.
func (c *child) stop(grace time.Duration) {
	defer closeAll(c.stdin, c.stdout)
	defer c.kill()
	c.stdin.Close()
	if c.waitExit(grace) {
		return
	}
	if err := signalGroup(c.cmd.Process, syscall.SIGTERM); err == nil && c.waitExit(grace) {
		return
	}
	c.kill()
	c.waitExit(grace + time.Second)
}

func (c *child) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
