package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// Engine runs Docker Compose against a compiled pod. This file is the only
// place claw invokes Docker Compose.
type Engine interface {
	// Compose runs one compose subcommand (e.g. "up", "-d") against the
	// pod's compose.generated.yml with the pod's project name, streaming
	// its output to the command's streams.
	Compose(ctx context.Context, args ...string) error
}

// EngineConfig locates the compiled pod.
type EngineConfig struct {
	// Dir is the pod directory; File the generated compose file in it.
	Dir, File string
	// Project is the compose project name.
	Project string
	IO      IOStreams
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
	full := append([]string{}, e.cmd[1:]...)
	full = append(full, "-p", e.cfg.Project, "-f", e.cfg.File)
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, e.cmd[0], full...)
	cmd.Dir = e.cfg.Dir
	cmd.Env = append(os.Environ(), operatorEnv()...)
	watch := &poolWatch{w: e.cfg.IO.ErrOut}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.cfg.IO.In, e.cfg.IO.Out, watch
	// On cancellation (Ctrl-C) let compose stop the pod gracefully: it gets
	// SIGINT, as from a terminal, and a grace period before it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = composeGrace
	if err := cmd.Run(); err != nil {
		if watch.seen {
			return fmt.Errorf("%s %s: %w\n%s", strings.Join(e.cmd, " "), strings.Join(args, " "), err, poolHint)
		}
		return fmt.Errorf("%s %s: %w", strings.Join(e.cmd, " "), strings.Join(args, " "), err)
	}
	return nil
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

// composeGrace is how long compose may take to stop after an interrupt.
const composeGrace = 30 * time.Second

var projectUnsafe = regexp.MustCompile(`[^a-z0-9_-]+`)

// ProjectName turns a pod name into a compose project name (lower case
// letters, digits, '_' and '-', starting with a letter or digit).
func ProjectName(pod string) string {
	s := strings.Trim(projectUnsafe.ReplaceAllString(strings.ToLower(pod), "-"), "-_")
	if s == "" {
		return "claw"
	}
	return s
}
