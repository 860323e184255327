package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
)

func init() { registerVerb("up", func(f *Factory) *cobra.Command { return NewCmdUp(f, nil) }) }

// UpOptions are claw up's inputs.
type UpOptions struct {
	BuildOptions
	// Detach runs the pod in the background (-d).
	Detach bool
	// Build rebuilds images of services with a build context first.
	Build bool
}

// NewCmdUp builds `claw up`; runF replaces upRun in tests.
func NewCmdUp(f *Factory, runF func(context.Context, *Factory, *UpOptions) error) *cobra.Command {
	opts := &UpOptions{}
	cmd := &cobra.Command{
		Use:   "up [-f claw-pod.yml] [-d]",
		Short: "Compile the pod and start it with Docker Compose",
		Long: `Up compiles the pod (reading descriptors from local images too), applies
the compile to the live context cllama reads (on a running pod too: each
changed agent switches at once), and runs docker compose -f
compose.generated.yml up. It uses "docker compose" when available, otherwise
"docker-compose".`,
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
	return cmd
}

func upRun(ctx context.Context, f *Factory, opts *UpOptions) error {
	p, err := opts.load(ctx, f.Env)
	if err != nil {
		return err
	}
	// The engine first: compiling reads descriptors from its images, and
	// a pod that cannot start is better refused before anything is
	// written.
	eng, err := newEngine(ctx, f, p)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "claw: compiling %s\n", opts.File)
	res, _, err := compileLoaded(ctx, f, p, &opts.BuildOptions)
	if err != nil {
		return err
	}
	if len(res.Pod.Unrunnable) > 0 {
		return fmt.Errorf("%s: services %s have neither image nor build; give each an image (or a build context) to run the pod", res.Pod.File, strings.Join(res.Pod.Unrunnable, ", "))
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
	for i, a := range res.Agents {
		fmt.Fprintf(f.IO.ErrOut, "claw:   %s: %d tool(s), %d feed(s); reaches %s\n", a.ID, len(a.Tools), len(a.Feeds), compile.ReachLine(res.Perimeter.Agents[i]))
	}
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
	return eng.Compose(ctx, args...)
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
	return strings.Join(parts, "; ")
}
