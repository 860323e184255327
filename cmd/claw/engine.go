package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/clawdapus/clawgo/internal/compile"
)

// Engine runs Docker Compose against a compiled pod. This file is the only
// place claw invokes Docker Compose.
type Engine interface {
	// Compose runs one compose subcommand (e.g. "up", "-d") against the
	// pod's compose.generated.yml with the pod's project name, streaming
	// its output to the command's streams.
	Compose(ctx context.Context, args ...string) error
	// Containers lists the pod's containers as the engine reports them
	// (state, health, ports), sorted by service.
	Containers(ctx context.Context) ([]Container, error)
}

// EngineConfig locates the compiled pod.
type EngineConfig struct {
	// Dir is the pod directory; File the generated compose file in it.
	Dir, File string
	// Project is the compose project name.
	Project string
	IO      IOStreams
	// Signals, when set, hands the interrupts claw receives to compose
	// while it runs.
	Signals *SignalRelay
}

// ErrNoCompose is returned when neither `docker compose` nor
// `docker-compose` is installed.
var ErrNoCompose = errors.New("neither `docker compose` (v2) nor `docker-compose` was found; install Docker Compose")

type composeEngine struct {
	cfg EngineConfig
	cmd []string
}

// NewComposeEngine uses the command in CLAW_COMPOSE when set (for example
// "docker-compose", "docker compose" or a path to a Compose v2 binary),
// else detects `docker compose` (preferred) or the standalone
// `docker-compose` (1.29 and later work with the generated file). It then
// checks that the Docker engine answers (see enginecheck.go), so an
// unreachable engine is one line from claw rather than compose's failure.
func NewComposeEngine(ctx context.Context, cfg EngineConfig) (Engine, error) {
	cmd, err := composeCommand(ctx)
	if err != nil {
		return nil, err
	}
	if ep, ok := resolveEngine(os.Getenv); ok {
		if err := checkEngine(ctx, ep); err != nil {
			return nil, err
		}
	}
	return &composeEngine{cfg: cfg, cmd: cmd}, nil
}

// composeCommand is the compose command line to run.
func composeCommand(ctx context.Context) ([]string, error) {
	if explicit := strings.Fields(os.Getenv("CLAW_COMPOSE")); len(explicit) > 0 {
		if _, err := exec.LookPath(explicit[0]); err != nil {
			return nil, fmt.Errorf("CLAW_COMPOSE=%q: %w; set it to a Docker Compose command such as docker-compose or \"docker compose\", or unset it", os.Getenv("CLAW_COMPOSE"), err)
		}
		return explicit, nil
	}
	if _, err := exec.LookPath("docker"); err == nil {
		if exec.CommandContext(ctx, "docker", "compose", "version").Run() == nil {
			return []string{"docker", "compose"}, nil
		}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}, nil
	}
	return nil, ErrNoCompose
}

func (e *composeEngine) Compose(ctx context.Context, args ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	full := append([]string{}, e.cmd[1:]...)
	full = append(full, "-p", e.cfg.Project, "-f", e.cfg.File)
	full = append(full, args...)
	cmd := exec.Command(e.cmd[0], full...)
	cmd.Dir = e.cfg.Dir
	cmd.Env = append(os.Environ(), operatorEnv()...)
	note := &buildNoteFilter{w: e.cfg.IO.ErrOut}
	watch := &poolWatch{w: note}
	force := &forceFilter{w: watch}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.cfg.IO.In, e.cfg.IO.Out, force
	// Interrupts reach compose once each (see procgroup_unix.go): compose
	// stops the pod gracefully on the first and forces on the second.
	group := newComposeGroup(cmd)
	if err := cmd.Start(); err != nil {
		group.restore()
		return fmt.Errorf("%s: %w", strings.Join(e.cmd, " "), err)
	}
	detach := e.cfg.Signals.Attach(func(sig os.Signal) { _ = cmd.Process.Signal(sig) })
	// A context cancelled for another reason than a signal (the relay
	// forwards those) interrupts compose once, as a signal would.
	exited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(os.Interrupt)
		case <-exited:
		}
	}()
	err := cmd.Wait()
	close(exited)
	detach()
	group.restore()
	forced := force.finish(exitCode(err))
	_ = note.flush()
	if err != nil {
		what := fmt.Sprintf("%s %s", strings.Join(e.cmd, " "), strings.Join(args, " "))
		switch {
		case forced:
			return fmt.Errorf("%s: stopped by force on a second interrupt (its containers were killed)", what)
		case exitCode(err) == 130:
			// Compose v2's status after an interrupt (128 + SIGINT).
			return fmt.Errorf("%s: stopped on an interrupt (exit status 130)", what)
		case watch.seen:
			return fmt.Errorf("%s: %w\n%s", what, err, poolHint)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// exitCode is a finished command's exit status, -1 when it did not exit
// normally, 0 without error.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// forceFilter passes compose's stderr through but holds back a line that
// is only "2": docker-compose 1.29, killing the containers on a second
// interrupt, logs its own exit status (2) as a line of its own. When
// compose then exits with status 2 the line is dropped (claw says what
// happened instead); otherwise it is written after all.
type forceFilter struct {
	w       io.Writer
	held    bool
	midLine bool
}

const forceLine = "2\n"

func (f *forceFilter) Write(b []byte) (int, error) {
	n := len(b)
	if f.held {
		f.held = false
		if _, err := io.WriteString(f.w, forceLine); err != nil {
			return 0, err
		}
	}
	if !f.midLine && string(b) == forceLine {
		f.held = true
		return n, nil
	}
	if bytes.HasSuffix(b, []byte("\n"+forceLine)) {
		b = b[:len(b)-len(forceLine)]
		f.held = true
	}
	if len(b) > 0 {
		f.midLine = b[len(b)-1] != '\n'
	}
	if _, err := f.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

// finish settles a held line once compose exited with code; it reports
// whether compose stopped by force.
func (f *forceFilter) finish(code int) bool {
	if !f.held {
		return false
	}
	f.held = false
	if code == 2 {
		return true
	}
	_, _ = io.WriteString(f.w, forceLine)
	return false
}

// poolHint explains the engine running out of address pools: every agent
// has a network of its own (the perimeter), and the engine's default pools
// hold about 30 networks per host.
const poolHint = "claw: the Docker engine has no address pool left for the pod's networks (each agent has its own network); " +
	"give it small pools in /etc/docker/daemon.json, e.g. \"default-address-pools\": [{\"base\": \"10.201.0.0/16\", \"size\": 28}], " +
	"restart the engine, or remove unused networks (docker network prune)"

// poolWatch passes compose's stderr through and notes the engine's
// address-pool exhaustion, which compose reports in its own words.
type poolWatch struct {
	w    io.Writer
	tail []byte
	seen bool
}

const poolMessage = "non-overlapping IPv4 address pool"

func (p *poolWatch) Write(b []byte) (int, error) {
	if !p.seen {
		p.tail = append(p.tail, b...)
		p.seen = bytes.Contains(p.tail, []byte(poolMessage))
		if keep := len(poolMessage); len(p.tail) > keep {
			p.tail = append(p.tail[:0], p.tail[len(p.tail)-keep:]...)
		}
	}
	return p.w.Write(b)
}

// operatorEnv tells compose who runs claw, for the generated file's
// `user: ${CLAW_UID}:${CLAW_GID}` on the cllama service (see
// compile.CllamaUser). An explicit CLAW_UID/CLAW_GID in the environment wins.
func operatorEnv() []string {
	var env []string
	if os.Getenv("CLAW_UID") == "" {
		env = append(env, fmt.Sprintf("CLAW_UID=%d", os.Getuid()))
	}
	if os.Getenv("CLAW_GID") == "" {
		env = append(env, fmt.Sprintf("CLAW_GID=%d", os.Getgid()))
	}
	return env
}

// ProjectName turns a pod name into a compose project name (see
// compile.ProjectName).
func ProjectName(pod string) string { return compile.ProjectName(pod) }
