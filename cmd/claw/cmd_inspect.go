package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/inspect"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() {
	registerVerb("inspect", func(f *Factory) *cobra.Command { return NewCmdInspect(f, nil) })
}

// InspectOptions are claw inspect's inputs.
type InspectOptions struct {
	PodOptions
	// Name narrows the view to one service or agent; empty shows all.
	Name string
	JSON bool
	// Images reads descriptors from local images, as `claw up` did.
	Images bool
}

// NewCmdInspect builds `claw inspect`; runF replaces inspectRun in tests.
func NewCmdInspect(f *Factory, runF func(context.Context, *Factory, *InspectOptions) error) *cobra.Command {
	opts := &InspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect [service|agent] [-f claw-pod.yml] [--json]",
		Short: "Show each service's descriptor and each agent's tools, feeds and policy, with where they came from",
		Long: `Inspect is the operator's view of the compiled pod.

Per service: where its descriptor was found (describe-file, discovered
snapshot, image label, image, build context), its tools marked read-only or
side-effect with how cllama calls them and which agents they are granted to,
its feeds, and its endpoints (operator documentation that agents never see).

Per agent: its effective tools (the presented name the model sees and the
canonical <service>.<tool>), the grant entries that gave each (the service's
own tools: or the pod's tools-defaults), the descriptor declaring it; its feeds
and what subscribed them; its tool policy with the origin of each limit.

The pod is compiled again in memory (nothing is written) and compared with the
generated files; differences are listed as warnings. Pass --images when the
pod was compiled by ` + "`claw up`" + ` from descriptors baked into images.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return inspectRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the view as JSON")
	cmd.Flags().BoolVar(&opts.Images, "images", false, "also read descriptors from locally present Docker images")
	return cmd
}

func inspectRun(ctx context.Context, f *Factory, opts *InspectOptions) error {
	cp, err := openCompiled(opts.File)
	if err != nil {
		return err
	}
	p, err := opts.loadToCompile(ctx, f.Env)
	if err != nil {
		return err
	}
	copts := compile.Options{}
	if opts.Images && f.Images != nil {
		copts.Images = f.Images()
		copts.Progress = func(msg string) { fmt.Fprintf(f.IO.ErrOut, "claw: %s\n", termsafe.Lines(msg)) }
	}
	res, err := compile.Build(ctx, p, copts)
	if err != nil {
		return err
	}
	rep, err := inspect.Build(res, inspect.Disk{Dir: cp.Dir, ContextDir: cp.ContextDir, Changed: cp.changed})
	if err != nil {
		return err
	}
	if opts.Name != "" && !rep.Select(opts.Name) {
		return usageErrorf("%s: no service or agent %q (known: %s)", opts.File, opts.Name, strings.Join(termsafe.Strings(rep.Names()), ", "))
	}
	if opts.JSON {
		return rep.WriteJSON(f.IO.Out)
	}
	return rep.WriteText(f.IO.Out)
}
