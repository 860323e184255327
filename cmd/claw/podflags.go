package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
)

// PodOptions are the flags every pod verb shares.
type PodOptions struct {
	// File is the pod file (-f); default claw-pod.yml.
	File string
	// Profiles are compose profiles to enable.
	Profiles []string
}

func addPodFlags(cmd *cobra.Command, o *PodOptions) {
	cmd.Flags().StringVarP(&o.File, "file", "f", pod.DefaultFile, "pod file")
	cmd.Flags().StringSliceVar(&o.Profiles, "profile", nil, "compose profile to enable (repeatable)")
}

func (o *PodOptions) load(ctx context.Context, env []string) (*pod.Pod, error) {
	return pod.Load(ctx, pod.LoadOptions{File: o.File, Env: env, Profiles: o.Profiles})
}

// BuildOptions configure a compile (claw compile and claw up).
type BuildOptions struct {
	PodOptions
	// CllamaImage overrides the cllama image.
	CllamaImage string
	// Images reads descriptors from local images.
	Images bool
}

func addBuildFlags(cmd *cobra.Command, o *BuildOptions) {
	addPodFlags(cmd, &o.PodOptions)
	cmd.Flags().StringVar(&o.CllamaImage, "cllama-image", "", "cllama image (default: x-claw.cllama-defaults.image or "+compile.DefaultCllamaImage+")")
}

// compileAndStage loads, compiles and stages the pod, printing warnings.
func compileAndStage(ctx context.Context, f *Factory, o *BuildOptions) (*compile.Result, *compile.Staged, error) {
	p, err := o.load(ctx, f.Env)
	if err != nil {
		return nil, nil, err
	}
	return compileLoaded(ctx, f, p, o)
}

// compileLoaded compiles and stages a loaded pod, printing warnings: the
// running pod keeps its context until `claw up` applies the compile (see
// compile.Stage).
func compileLoaded(ctx context.Context, f *Factory, p *pod.Pod, o *BuildOptions) (*compile.Result, *compile.Staged, error) {
	opts := compile.Options{CllamaImage: o.CllamaImage}
	if o.Images && f.Images != nil {
		opts.Images = f.Images()
		opts.Progress = func(msg string) { fmt.Fprintf(f.IO.ErrOut, "claw: %s\n", msg) }
	}
	res, err := compile.Build(ctx, p, opts)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", w)
	}
	st, err := compile.Stage(p.Dir, res)
	if err != nil {
		return nil, nil, fmt.Errorf("writing the compiled pod: %w", err)
	}
	return res, st, nil
}

// generatedPath is compose.generated.yml next to the pod file.
func generatedPath(p *pod.Pod) string { return filepath.Join(p.Dir, compile.GeneratedFile) }
