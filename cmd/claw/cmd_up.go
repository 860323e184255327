package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() { registerVerb("up", func(f *Factory) *cobra.Command { return NewCmdUp(f, nil) }) }

// UpOptions are claw up's inputs.
type UpOptions struct {
	BuildOptions
	// Detach runs the pod in the background (-d).
	Detach bool
	// Build rebuilds images of services with a build context first.
	Build bool
	// Wait waits, after starting the pod in the background, until its
	// services are ready (see waitReady); WaitTimeout bounds the wait.
	Wait        bool
	WaitTimeout time.Duration
}

// NewCmdUp builds `claw up`; runF replaces upRun in tests.
func NewCmdUp(f *Factory, runF func(context.Context, *Factory, *UpOptions) error) *cobra.Command {
	opts := &UpOptions{}
	cmd := &cobra.Command{
		Use:   "up [-f claw-pod.yml] [-d | --wait]",
		Short: "Compile the pod and start it with Docker Compose",
		Long: `Up compiles the pod (reading descriptors from local images too), applies
the compile to the live context cllama reads (on a running pod too: each
changed agent switches at once), and runs docker compose -f
compose.generated.yml up. It uses "docker compose" when available, otherwise
"docker-compose". An image a service runs without building it is pulled
first when missing; one that cannot be pulled stops up before anything
starts, named with how to get it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return upRun(cmd.Context(), f, opts)
		},
	}
	addBuildFlags(cmd, &opts.BuildOptions)
	cmd.Flags().BoolVarP(&opts.Detach, "detach", "d", false, "run in the background")
	cmd.Flags().BoolVar(&opts.Build, "build", false, "build images before starting")
	cmd.Flags().BoolVar(&opts.Images, "images", true, "read descriptors from locally present Docker images")
	cmd.Flags().BoolVar(&opts.Wait, "wait", false, "start in the background, then wait until cllama and every service with a health check is healthy and the rest run")
	cmd.Flags().DurationVar(&opts.WaitTimeout, "wait-timeout", defaultWaitTimeout, "how long --wait waits")
	return cmd
}

// defaultWaitTimeout is --wait-timeout's default.
const defaultWaitTimeout = 120 * time.Second

func upRun(ctx context.Context, f *Factory, opts *UpOptions) error {
	if opts.WaitTimeout <= 0 {
		return usageErrorf("--wait-timeout %s: want a positive duration such as 2m", opts.WaitTimeout)
	}
	if opts.Wait {
		opts.Detach = true
	}
	p, err := opts.loadToCompile(ctx, f.Env)
	if err != nil {
		return err
	}
	// The engine first: compiling reads descriptors from its images, and
	// a pod that cannot start is better refused before anything is
	// written.
	eng, err := newEngine(ctx, f, p)
	if err != nil {
		if len(p.Problems) > 0 {
			// The pod's own problems first: they need fixing whatever
			// the engine.
			return p.Problems.Err()
		}
		return err
	}
	// One claw at a time compiles and applies a pod; compose itself may
	// then run as long as it likes.
	release, err := lockPod(f, p.Dir, "claw up")
	if err != nil {
		return err
	}
	defer release()
	fmt.Fprintf(f.IO.ErrOut, "claw: compiling %s\n", opts.File)
	res, _, err := compileLoaded(ctx, f, p, &opts.BuildOptions)
	if err != nil {
		return err
	}
	if len(res.Pod.Unrunnable) > 0 {
		return fmt.Errorf("%s: services %s have neither image nor build; give each an image (or a build context) to run the pod", res.Pod.File, strings.Join(res.Pod.Unrunnable, ", "))
	}
	for i, a := range res.Agents {
		fmt.Fprintf(f.IO.ErrOut, "claw:   %s: %d tool(s), %d feed(s); reaches %s\n", termsafe.String(a.ID), len(a.Tools), len(a.Feeds), compile.ReachLine(res.Perimeter.Agents[i]))
	}
	// Every image the pod runs without building it is here (or pulled)
	// before anything of this compile is applied.
	if err := upImages(ctx, f, res); err != nil {
		return err
	}
	// Apply the compile: a running cllama sees each changed agent switch
	// to its new context at once (compose recreates only the containers
	// whose configuration changed).
	applied, err := compile.Apply(res.Pod.Dir)
	if err != nil {
		return fmt.Errorf("applying the compiled context: %w", err)
	}
	if line := appliedLine(applied); line != "" {
		fmt.Fprintf(f.IO.ErrOut, "claw: applied: %s\n", line)
	}
	release()
	// cllama writes session history here; create it so the bind mount is a
	// directory owned by the operator.
	if err := os.MkdirAll(filepath.Join(res.Pod.Dir, compile.HistoryDir), 0o755); err != nil {
		return err
	}
	args := []string{"up"}
	if opts.Detach {
		args = append(args, "-d")
	}
	if opts.Build {
		args = append(args, "--build")
	}
	fmt.Fprintf(f.IO.ErrOut, "claw: starting pod %s with %s\n", res.Pod.Name, compile.GeneratedFile)
	if opts.PublishCllama != "" {
		addr, _ := publishAddress("--publish-cllama", opts.PublishCllama)
		fmt.Fprintf(f.IO.ErrOut, "claw: cllama is published on the host at http://%s (OpenAI base URL http://%s/v1; an agent's token is in %s/<agent>/metadata.json)\n", addr, addr, compile.ContextDir)
	}
	if opts.PublishMetrics != "" {
		addr, _ := publishAddress("--publish-metrics", opts.PublishMetrics)
		fmt.Fprintf(f.IO.ErrOut, "claw: cllama's metrics are published on the host at http://%s/metrics\n", addr)
	}
	if err := eng.Compose(ctx, args...); err != nil {
		return err
	}
	if line := adminLine(ctx, eng, res.Pod); line != "" {
		fmt.Fprintln(f.IO.ErrOut, line)
	}
	if !opts.Wait {
		return nil
	}
	services, err := generatedServices(res.Pod.Dir, compile.GeneratedFile)
	if err != nil {
		return err
	}
	return waitReady(ctx, eng, res.Pod.Name, services, opts.WaitTimeout, f.IO.ErrOut)
}

// waitPoll is how often --wait asks the engine.
const waitPoll = 500 * time.Millisecond

// waitReady waits until every service of the pod is ready: its
// containers healthy when they have a health check (cllama has one),
// running otherwise. A container that exited or turned unhealthy fails at
// once, named; past the timeout, those not ready yet are named.
func waitReady(ctx context.Context, eng Engine, podName string, services []string, timeout time.Duration, errOut io.Writer) error {
	deadline := time.Now().Add(timeout)
	for {
		cs, err := eng.Containers(ctx)
		if err != nil {
			return err
		}
		r := readiness(services, cs)
		if r.failed != "" {
			return errors.New(r.failed)
		}
		if len(r.pending) == 0 {
			fmt.Fprintf(errOut, "claw: pod %s is ready: %d service(s) running, %d of them healthy\n", podName, r.running, r.healthy)
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("pod %s is not ready after %s: %s; see `claw ps` and `claw logs SERVICE`", podName, timeout, strings.Join(r.pending, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(waitPoll, time.Until(deadline))):
		}
	}
}

// podReadiness is one look at the pod's containers.
type podReadiness struct {
	// pending names what is not ready yet and why; failed says what will
	// never be.
	pending          []string
	failed           string
	running, healthy int
}

func readiness(services []string, cs []Container) podReadiness {
	var r podReadiness
	by := map[string][]Container{}
	for _, c := range cs {
		by[c.Service] = append(by[c.Service], c)
	}
	for _, svc := range services {
		if len(by[svc]) == 0 {
			r.pending = append(r.pending, svc+" (no container)")
			continue
		}
		for _, c := range by[svc] {
			switch {
			case c.State == "exited" || c.State == "dead":
				r.failed = fmt.Sprintf("service %s exited (container %s, exit code %d); see `claw logs %s`", svc, c.Name, c.ExitCode, svc)
				return r
			case c.Health == "unhealthy":
				r.failed = fmt.Sprintf("service %s is unhealthy (container %s)", svc, c.Name)
				if c.HealthLog != "" {
					r.failed += ": " + firstOf(c.HealthLog)
				}
				r.failed += fmt.Sprintf("; see `claw logs %s`", svc)
				return r
			case c.State != "running":
				r.pending = append(r.pending, fmt.Sprintf("%s (%s)", svc, c.State))
			case c.Health == "healthy":
				r.running++
				r.healthy++
			case c.Health != "":
				r.pending = append(r.pending, fmt.Sprintf("%s (health: %s)", svc, c.Health))
			default:
				r.running++
			}
		}
	}
	return r
}

// firstOf is the first line of s.
func firstOf(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// appliedLine says what Apply changed; empty when nothing.
func appliedLine(a *compile.Applied) string {
	var parts []string
	for _, p := range []struct {
		what string
		ids  []string
	}{{"changed", a.Changed}, {"added", a.Added}, {"removed", a.Removed}} {
		if len(p.ids) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.ids, ", "))
		}
	}
	if a.Providers {
		parts = append(parts, "providers changed")
	}
	if a.PodSettings {
		parts = append(parts, "pod settings changed (cllama restarts)")
	}
	return strings.Join(parts, "; ")
}
