package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() {
	registerVerb("console", func(f *Factory) *cobra.Command { return NewCmdConsole(f, nil) })
}

// ConsoleOptions are claw console's inputs.
type ConsoleOptions struct {
	PodOptions
}

// NewCmdConsole builds `claw console`; runF replaces consoleRun in tests.
func NewCmdConsole(f *Factory, runF func(context.Context, *Factory, *ConsoleOptions) error) *cobra.Command {
	opts := &ConsoleOptions{}
	cmd := &cobra.Command{
		Use:   "console [-f claw-pod.yml]",
		Short: "Print the running pod's console URL",
		Long: `Console prints the URL of the running pod's operator console: cllama's admin
listener, which claw up publishes on loopback. Log in with the operator
token (.claw-auth/operator-token beside the pod file). See docs/console.md.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return consoleRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	return cmd
}

func consoleRun(ctx context.Context, f *Factory, opts *ConsoleOptions) error {
	p, err := opts.load(ctx, f.Env)
	if err != nil {
		return err
	}
	eng, err := engineFor(ctx, f, p)
	if err != nil {
		return err
	}
	c, err := adminOf(ctx, eng, p)
	if err != nil {
		return err
	}
	fmt.Fprintln(f.IO.Out, termsafe.String(c.URL()+"/"))
	fmt.Fprintf(f.IO.ErrOut, "log in with the operator token in %s\n",
		termsafe.String(filepath.Join(p.Dir, filepath.FromSlash(compile.OperatorTokenFile))))
	return nil
}
