package main

import (
	"context"

	"github.com/spf13/cobra"
)

func init() { registerVerb("ps", func(f *Factory) *cobra.Command { return NewCmdPs(f, nil) }) }

// PsOptions are claw ps's inputs.
type PsOptions struct {
	PodOptions
}

// NewCmdPs builds `claw ps`; runF replaces psRun in tests.
func NewCmdPs(f *Factory, runF func(context.Context, *Factory, *PsOptions) error) *cobra.Command {
	opts := &PsOptions{}
	cmd := &cobra.Command{
		Use:   "ps [-f claw-pod.yml]",
		Short: "List the pod's containers",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return psRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	return cmd
}

func psRun(ctx context.Context, f *Factory, opts *PsOptions) error {
	eng, err := loadForEngine(ctx, f, &opts.PodOptions)
	if err != nil {
		return err
	}
	return eng.Compose(ctx, "ps")
}
