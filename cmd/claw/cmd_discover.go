package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/discover"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() {
	registerVerb("discover", func(f *Factory) *cobra.Command { return NewCmdDiscover(f, nil) })
}

// DiscoverOptions are claw discover's inputs.
type DiscoverOptions struct {
	PodOptions
	// Services to discover; empty means every x-claw.mcp-stdio service.
	Services []string
	// Local runs claw-mcp-stdio and the command on the host instead of in
	// a container from the service's image.
	Local bool
	// Wrapper is the claw-mcp-stdio binary for --local.
	Wrapper string
	// Pull is docker run's --pull policy.
	Pull string
	// Timeout bounds each service.
	Timeout time.Duration
	// Verbose copies the wrapper's output to stderr as it comes.
	Verbose bool
}

// NewCmdDiscover builds `claw discover`; runF replaces discoverRun in tests.
func NewCmdDiscover(f *Factory, runF func(context.Context, *Factory, *DiscoverOptions) error) *cobra.Command {
	opts := &DiscoverOptions{}
	cmd := &cobra.Command{
		Use:   "discover [service...] [--local] [-f claw-pod.yml]",
		Short: "Snapshot the tools of stdio MCP services into .claw-discovered/",
		Long: `Discover starts each x-claw.mcp-stdio service's wrapper (claw-mcp-stdio) for
a moment — in a short-lived container from the service's image with its
environment and volumes, or on the host with --local — performs MCP initialize
and tools/list, and writes .claw-discovered/<service>.claw-describe.json: a
claw.describe v2 descriptor that claw compile and claw up use as the service's
tools. The wrapper is always stopped afterwards. With no service named, every
stdio MCP service of the pod is discovered.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Services = args
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return discoverRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	cmd.Flags().BoolVar(&opts.Local, "local", false, "run the wrapper and the command on the host instead of in a container")
	cmd.Flags().StringVar(&opts.Wrapper, "wrapper", "", "claw-mcp-stdio binary for --local (default: next to claw, else on PATH)")
	cmd.Flags().StringVar(&opts.Pull, "pull", "", "docker run --pull policy: never (default: local images only), missing or always")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", discover.DefaultTimeout, "time allowed per service (start, health, initialize, tools/list)")
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "show the wrapper's output")
	return cmd
}

func discoverRun(ctx context.Context, f *Factory, opts *DiscoverOptions) error {
	switch opts.Pull {
	case "", "missing", "never", "always":
	default:
		return usageErrorf("--pull %q: use missing, never or always", opts.Pull)
	}
	if opts.Timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	p, err := opts.load(ctx, f.Env)
	if err != nil {
		return err
	}
	targets, err := discover.Targets(p, opts.Services)
	if err != nil {
		return err
	}
	do := discover.Options{Mode: discover.ModeContainer, Wrapper: opts.Wrapper, Pull: opts.Pull, Timeout: opts.Timeout}
	if opts.Local {
		do.Mode = discover.ModeLocal
	}
	if opts.Verbose {
		// The wrapper's and the server's own output, escaped.
		log := termsafe.NewWriter(f.IO.ErrOut)
		defer log.Flush()
		do.Log = log
	}
	var failed []string
	var errs []error
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		where := "image " + t.Image
		if opts.Local {
			where = "on the host"
		}
		fmt.Fprintf(f.IO.ErrOut, "claw: discovering %s (%s) %s\n", termsafe.String(t.Service), termsafe.String(commandLine(t)), termsafe.String(where))
		res, err := discover.Discover(ctx, t, do)
		if err == nil {
			for _, w := range res.Skipped {
				fmt.Fprintf(f.IO.ErrOut, "warning: %s: service %q: %s\n", termsafe.String(p.File), t.Service, termsafe.Lines(w))
			}
			var rel string
			if rel, err = discover.Write(p.Dir, t.Service, res.Data); err == nil {
				reportDiscovered(f.IO.Out, res, rel)
				continue
			}
		}
		failed = append(failed, t.Service)
		errs = append(errs, fmt.Errorf("%s: service %q: %w", p.File, t.Service, err))
		if len(targets) > 1 {
			fmt.Fprintf(f.IO.ErrOut, "claw: %s\n", termsafe.Lines(errs[len(errs)-1].Error()))
		}
	}
	switch {
	case len(failed) == 0:
		return nil
	case len(targets) == 1:
		return errs[0]
	}
	return fmt.Errorf("discovery failed for %s (see above)", strings.Join(termsafe.Strings(failed), ", "))
}

// reportDiscovered says what a service listed; the tool names and the
// protocol version are the server's, escaped.
func reportDiscovered(w io.Writer, res *discover.Result, rel string) {
	names := make([]string, len(res.Snapshot.Tools))
	for i, t := range res.Snapshot.Tools {
		names[i] = termsafe.String(t.Name)
	}
	fmt.Fprintf(w, "%s: %d tool(s) [%s] -> %s (protocol %s)\n", termsafe.String(res.Service), len(names), strings.Join(names, ", "),
		termsafe.String(rel), termsafe.String(res.Snapshot.Discovery.ProtocolVersion))
}

func commandLine(t discover.Target) string {
	return strings.TrimSpace(t.Command + " " + strings.Join(t.Args, " "))
}
