package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
)

// engineFor returns the compose engine for a loaded pod whose
// compose.generated.yml exists.
func engineFor(ctx context.Context, f *Factory, p *pod.Pod) (Engine, error) {
	if _, err := os.Stat(generatedPath(p)); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %s not found; run `claw up` (or `claw compile`) first", p.File, compile.GeneratedFile)
	}
	return newEngine(ctx, f, p)
}

// newEngine returns the compose engine of a loaded pod; creating it checks
// that the Docker engine answers.
func newEngine(ctx context.Context, f *Factory, p *pod.Pod) (Engine, error) {
	return f.Engine(ctx, EngineConfig{Dir: p.Dir, File: compile.GeneratedFile, Project: ProjectName(p.Name), IO: f.IO, Signals: f.Signals})
}

// loadForEngine loads the pod (for its directory and name) and its engine.
func loadForEngine(ctx context.Context, f *Factory, o *PodOptions) (Engine, error) {
	p, err := o.load(ctx, f.Env)
	if err != nil {
		return nil, err
	}
	return engineFor(ctx, f, p)
}
