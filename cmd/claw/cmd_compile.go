package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/kube"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() {
	registerVerb("compile", func(f *Factory) *cobra.Command { return NewCmdCompile(f, nil) })
}

// CompileOptions are claw compile's inputs.
type CompileOptions struct {
	BuildOptions
	// Quiet suppresses the per-agent summary.
	Quiet bool
	// Target is what to render besides the compiled context: compose
	// (compose.generated.yml, always written) or kubernetes (manifests in
	// Output, default k8s/ beside the pod file).
	Target string
	Output string
}

// NewCmdCompile builds `claw compile`; runF replaces compileRun in tests.
func NewCmdCompile(f *Factory, runF func(context.Context, *Factory, *CompileOptions) error) *cobra.Command {
	opts := &CompileOptions{}
	cmd := &cobra.Command{
		Use:   "compile [-f claw-pod.yml]",
		Short: "Compile the pod into per-agent context and compose.generated.yml (no Docker)",
		Long: `Compile reads the pod file and its services' descriptors and writes:
  compose.generated.yml
  .claw-runtime/staging/context/<agent>/  metadata.json AGENTS.md CLAWDAPUS.md
                                          tools.json feeds.json service-auth/ skills/
  .claw-runtime/staging/auth/providers.json
The staged context becomes the live one (.claw-runtime/context, .claw-auth),
which cllama reads, when ` + "`claw up`" + ` applies it; a pod never run gets it at
once. It touches no Docker unless --images is given, and prints what each
agent may call (presented -> canonical tool names) and read (feeds). Usable
in CI.

--target kubernetes also renders the pod as Kubernetes manifests in -o DIR
(default k8s/ beside the pod file): a namespace named after the pod,
workloads, Services, context ConfigMaps and Secrets, cllama, NetworkPolicies
of the perimeter and a kustomization.yaml; it prints the images the cluster
must be able to pull. Apply with kubectl apply -k DIR.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return compileRun(cmd.Context(), f, opts)
		},
	}
	addBuildFlags(cmd, &opts.BuildOptions)
	cmd.Flags().BoolVar(&opts.Images, "images", false, "also read descriptors from locally present Docker images")
	cmd.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing but errors and warnings")
	cmd.Flags().StringVar(&opts.Target, "target", "compose", "compose, or kubernetes: also render Kubernetes manifests")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "directory of the Kubernetes manifests (default k8s beside the pod file)")
	return cmd
}

func compileRun(ctx context.Context, f *Factory, opts *CompileOptions) error {
	switch {
	case opts.Target != "compose" && opts.Target != kube.Target:
		return usageErrorf("--target %q: use compose or %s", opts.Target, kube.Target)
	case opts.Output != "" && opts.Target != kube.Target:
		return usageErrorf("--output is for --target %s", kube.Target)
	}
	res, st, err := compileAndStage(ctx, f, &opts.BuildOptions)
	if err != nil {
		return err
	}
	if !opts.Quiet {
		fmt.Fprint(f.IO.Out, compile.Summary(res))
		where := fmt.Sprintf("%s; context and providers staged in %s", compile.GeneratedFile, compile.StagingDir)
		if st.Applied {
			where = fmt.Sprintf("%s, %s, %s", compile.ContextDir, compile.ProvidersFile, compile.GeneratedFile)
			if slices.ContainsFunc(res.Agents, (*compile.Agent).HasNative) {
				where += ", " + compile.RunnerDir
			}
		}
		fmt.Fprintf(f.IO.Out, "\nwrote %d files (%s)\n", len(res.Output.Files), where)
	}
	if len(st.Pending) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "claw: the pod's live context differs (%s) and stays as it is: `claw up` applies this compile\n", strings.Join(st.Pending, ", "))
	}
	if opts.Target == kube.Target {
		return renderKube(f, opts, res)
	}
	return nil
}

// renderKube writes the Kubernetes manifests of a compiled pod.
func renderKube(f *Factory, opts *CompileOptions, res *compile.Result) error {
	m, err := kube.Render(res)
	if err != nil {
		return err
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", termsafe.Lines(w))
	}
	dir, shown := opts.Output, opts.Output
	if dir == "" {
		dir, shown = filepath.Join(res.Pod.Dir, "k8s"), filepath.Join(filepath.Dir(opts.File), "k8s")
	}
	if err := m.Write(dir); err != nil {
		return fmt.Errorf("writing the Kubernetes manifests: %w", err)
	}
	if !opts.Quiet {
		fmt.Fprint(f.IO.Out, "\n"+m.Summary(shown))
	}
	return nil
}
