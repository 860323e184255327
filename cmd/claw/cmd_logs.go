package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() { registerVerb("logs", func(f *Factory) *cobra.Command { return NewCmdLogs(f, nil) }) }

// LogsOptions are claw logs's inputs.
type LogsOptions struct {
	PodOptions
	// Service limits the logs to one service (or agent replica); empty
	// means all.
	Service string
	Follow  bool
	// Tail is the number of lines per container; empty means all.
	Tail string
}

// NewCmdLogs builds `claw logs`; runF replaces logsRun in tests.
func NewCmdLogs(f *Factory, runF func(context.Context, *Factory, *LogsOptions) error) *cobra.Command {
	opts := &LogsOptions{}
	cmd := &cobra.Command{
		Use:   "logs [service] [-f claw-pod.yml] [--follow] [--tail N]",
		Short: "Show the logs of the pod's containers",
		Long: `Logs shows the logs of the pod's containers, or of one service (an agent
replica is a service of its own; cllama is one too). As in every claw verb,
-f names the pod file; following the output is --follow.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Service = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return logsRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	cmd.Flags().BoolVar(&opts.Follow, "follow", false, "follow log output")
	cmd.Flags().StringVar(&opts.Tail, "tail", "", "number of lines to show from the end of each log")
	return cmd
}

func logsRun(ctx context.Context, f *Factory, opts *LogsOptions) error {
	if _, err := os.Stat(opts.File); errors.Is(err, os.ErrNotExist) && opts.File != "" {
		// `claw logs -f cllama` from the habit of `docker compose logs -f`.
		return usageErrorf("-f %s: no such pod file; -f names the pod file in every claw verb (to follow the logs, use --follow)", opts.File)
	}
	p, err := opts.load(ctx, f.Env)
	if err != nil {
		return err
	}
	if opts.Service != "" {
		// Known without the engine: the generated file's services.
		if services, err := generatedServices(p.Dir, compile.GeneratedFile); err == nil && !slices.Contains(services, opts.Service) {
			hint := ""
			if fi, err := os.Stat(opts.Service); err == nil && !fi.IsDir() {
				hint = "; to name the pod file, use -f " + opts.Service
			}
			return usageErrorf("%s: no service %q in the pod (services: %s)%s", opts.File, opts.Service, strings.Join(services, ", "), hint)
		}
	}
	// The containers' output is the agents' and the services' own: escaped
	// for the terminal line by line (compose's prefixes stay at the start
	// of each line; nothing can move the cursor back over one).
	out := termsafe.NewWriter(f.IO.Out)
	defer out.Flush()
	lf := *f
	lf.IO.Out = out
	eng, err := engineFor(ctx, &lf, p)
	if err != nil {
		return err
	}
	args := []string{"logs", "--no-color"}
	if opts.Follow {
		args = append(args, "-f")
	}
	if opts.Tail != "" {
		args = append(args, "--tail", opts.Tail)
	}
	if opts.Service != "" {
		args = append(args, opts.Service)
	}
	return eng.Compose(ctx, args...)
}
