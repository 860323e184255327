package main

import (
	"context"

	"github.com/spf13/cobra"
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
		Use:   "logs [service] [-f]",
		Short: "Show the logs of the pod's containers",
		Args:  maxArgs(1),
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
	// -f is --follow here, as in docker compose logs; the pod file is
	// --file.
	cmd.Flags().StringVar(&opts.File, "file", "claw-pod.yml", "pod file")
	cmd.Flags().StringSliceVar(&opts.Profiles, "profile", nil, "compose profile to enable (repeatable)")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "follow log output")
	cmd.Flags().StringVar(&opts.Tail, "tail", "", "number of lines to show from the end of each log")
	return cmd
}

func logsRun(ctx context.Context, f *Factory, opts *LogsOptions) error {
	eng, err := loadForEngine(ctx, f, &opts.PodOptions)
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
