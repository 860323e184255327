package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
	"github.com/clawdapus/clawgo/internal/termsafe"
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

// loadToCompile is load for a verb that compiles the pod: a pod whose
// services' x-claw blocks have problems comes back with them (the error
// is then the pod's Problems), and compile.Build reports them with the
// problems it finds in the other services, so one run names them all.
// The pod is nil when it cannot be compiled at all.
func (o *PodOptions) loadToCompile(ctx context.Context, env []string) (*pod.Pod, error) {
	p, err := o.load(ctx, env)
	if p != nil && len(p.Problems) > 0 {
		return p, nil
	}
	return p, err
}

// BuildOptions configure a compile (claw compile and claw up).
type BuildOptions struct {
	PodOptions
	// CllamaImage overrides the cllama image.
	CllamaImage string
	// Images reads descriptors from local images.
	Images bool
	// PublishCllama is --publish-cllama as given: [HOST:]PORT.
	PublishCllama string
	// PublishMetrics is --publish-metrics as given: [HOST:]PORT.
	PublishMetrics string
	// PublishAdmin is --publish-admin as given: [HOST:]PORT; empty
	// publishes the admin listener on 127.0.0.1 at a free port.
	PublishAdmin string
}

func addBuildFlags(cmd *cobra.Command, o *BuildOptions) {
	addPodFlags(cmd, &o.PodOptions)
	cmd.Flags().StringVar(&o.CllamaImage, "cllama-image", "", "cllama image (default: x-claw.cllama-defaults.image or "+compile.DefaultCllamaImage+")")
	cmd.Flags().StringVar(&o.PublishMetrics, "publish-metrics", "", "turn cllama's Prometheus metrics on and publish them on the host at [HOST:]PORT (HOST default 127.0.0.1)")
	cmd.Flags().StringVar(&o.PublishAdmin, "publish-admin", "", "publish cllama's admin listener (approvals, console) on the host at [HOST:]PORT (default 127.0.0.1 and a free port, printed)")
	cmd.Flags().StringVar(&o.PublishCllama, "publish-cllama", "", "publish cllama's port on the host at [HOST:]PORT (HOST default 127.0.0.1), to reach it while testing")
}

// publishAddress checks a --publish-* flag's [HOST:]PORT and returns
// HOST:PORT, HOST an IPv4 address, 127.0.0.1 when omitted (the host
// only, not the network).
func publishAddress(flag, v string) (string, error) {
	host, port := "127.0.0.1", v
	if h, p, err := net.SplitHostPort(v); err == nil {
		host, port = h, p
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", usageErrorf("%s %q: want [HOST:]PORT with PORT from 1 to 65535, e.g. 18080 or 127.0.0.1:18080", flag, v)
	}
	if ip := net.ParseIP(host); ip == nil || ip.To4() == nil {
		return "", usageErrorf("%s %q: HOST must be an IPv4 address, e.g. 127.0.0.1 (the default) or 0.0.0.0", flag, v)
	}
	return host + ":" + port, nil
}

// compileAndStage loads, compiles and stages the pod, printing warnings.
func compileAndStage(ctx context.Context, f *Factory, o *BuildOptions) (*compile.Result, *compile.Staged, error) {
	p, err := o.loadToCompile(ctx, f.Env)
	if err != nil {
		return nil, nil, err
	}
	release, err := lockPod(f, p.Dir, "claw compile")
	if err != nil {
		return nil, nil, err
	}
	defer release()
	return compileLoaded(ctx, f, p, o)
}

// podLockWait is how long a claw waits for another working on the same pod.
const podLockWait = 2 * time.Minute

// lockPod takes the pod's lock (compile.LockPod), saying so while it waits.
func lockPod(f *Factory, dir, what string) (func(), error) {
	return compile.LockPod(dir, what, podLockWait, func(holder string) {
		fmt.Fprintf(f.IO.ErrOut, "claw: waiting for another claw working on this pod (%s)\n", holder)
	})
}

// compileLoaded compiles and stages a loaded pod, printing warnings: the
// running pod keeps its context until `claw up` applies the compile (see
// compile.Stage).
func compileLoaded(ctx context.Context, f *Factory, p *pod.Pod, o *BuildOptions) (*compile.Result, *compile.Staged, error) {
	opts := compile.Options{CllamaImage: o.CllamaImage}
	if o.PublishCllama != "" {
		addr, err := publishAddress("--publish-cllama", o.PublishCllama)
		if err != nil {
			return nil, nil, err
		}
		opts.PublishCllama = addr
	}
	if o.PublishMetrics != "" {
		addr, err := publishAddress("--publish-metrics", o.PublishMetrics)
		if err != nil {
			return nil, nil, err
		}
		opts.PublishMetrics = addr
	}
	if o.PublishAdmin != "" {
		addr, err := publishAddress("--publish-admin", o.PublishAdmin)
		if err != nil {
			return nil, nil, err
		}
		opts.PublishAdmin = addr
	}
	if o.Images && f.Images != nil {
		opts.Images = f.Images()
		opts.Progress = func(msg string) { fmt.Fprintf(f.IO.ErrOut, "claw: %s\n", termsafe.Lines(msg)) }
	}
	res, err := compile.Build(ctx, p, opts)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", termsafe.Lines(w))
	}
	st, err := compile.Stage(p.Dir, res)
	if err != nil {
		return nil, nil, fmt.Errorf("writing the compiled pod: %w", err)
	}
	return res, st, nil
}

// generatedPath is compose.generated.yml next to the pod file.
func generatedPath(p *pod.Pod) string { return filepath.Join(p.Dir, compile.GeneratedFile) }
