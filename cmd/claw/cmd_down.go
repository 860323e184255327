package main

import (
	"context"

	"github.com/spf13/cobra"
)

func init() { registerVerb("down", func(f *Factory) *cobra.Command { return NewCmdDown(f, nil) }) }

// DownOptions are claw down's inputs.
type DownOptions struct {
	PodOptions
	// Volumes also removes named volumes (-v).
	Volumes bool
}

// NewCmdDown builds `claw down`; runF replaces downRun in tests.
func NewCmdDown(f *Factory, runF func(context.Context, *Factory, *DownOptions) error) *cobra.Command {
	opts := &DownOptions{}
	cmd := &cobra.Command{
		Use:   "down [-f claw-pod.yml]",
		Short: "Stop and remove the pod's containers and networks",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return downRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	cmd.Flags().BoolVarP(&opts.Volumes, "volumes", "v", false, "also remove named volumes")
	return cmd
}

func downRun(ctx context.Context, f *Factory, opts *DownOptions) error {
	eng, err := loadForEngine(ctx, f, &opts.PodOptions)
	if err != nil {
		return err
	}
	args := []string{"down", "--remove-orphans"}
	if opts.Volumes {
		args = append(args, "-v")
	}
	return eng.Compose(ctx, args...)
}
