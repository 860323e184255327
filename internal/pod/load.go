package pod

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// DefaultFile is the pod file claw reads when none is named.
const DefaultFile = "claw-pod.yml"

// ExtensionKey is the compose extension holding the claw grammar.
const ExtensionKey = "x-claw"

// LoadOptions configures Load. The zero value loads ./claw-pod.yml with an
// empty process environment (only the pod directory's .env applies).
type LoadOptions struct {
	// File is the pod file; default DefaultFile. Errors name it as given.
	File string
	// Env is the process environment used for ${VAR} interpolation, in
	// os.Environ form; it wins over .env like in Docker Compose. Default none.
	Env []string
	// Profiles are the compose profiles to enable; default: the
	// comma-separated COMPOSE_PROFILES of Env, as in Docker Compose.
	Profiles []string
}

// Pod is a loaded claw-pod.yml.
type Pod struct {
	// File is the pod file as the operator named it; Dir is its absolute
	// directory, against which relative paths resolve.
	File string
	Dir  string
	// Name is x-claw.pod, or the compose project name.
	Name string
	// Project is the compose-go model: interpolated, extends resolved,
	// profiles applied; paths are absolute (compile makes them relative to
	// Dir again in compose.generated.yml).
	Project *types.Project
	Claw    Claw
	// Services holds every enabled compose service, by name.
	Services map[string]*Service
	// Warnings are non-fatal findings (services that cannot run, …).
	Warnings []string
	// Problems are the problems Load found in services' x-claw blocks
	// (see Load); compile.Build reports them with its own.
	Problems Errors
	// Unrunnable lists services with neither image nor build: the pod
	// compiles, but Docker cannot run it.
	Unrunnable []string
}

// Service is one compose service and its decoded x-claw block.
type Service struct {
	Name    string
	Compose types.ServiceConfig
	// Claw is nil when the service has no x-claw block, or an invalid one.
	Claw *ServiceClaw
	// Invalid is set when the service's x-claw block has problems (they
	// are in Pod.Problems): the service is no agent and provides nothing
	// until they are fixed.
	Invalid bool
}

// IsAgent reports whether the service is an agent.
func (s *Service) IsAgent() bool { return s.Claw.IsAgent() }

// Load reads and decodes the pod file.
//
// Every problem of the pod's and every service's x-claw block is found in
// one run. When all of them are in services' blocks, Load returns the pod
// as well as the error (the Errors in Pod.Problems): the services at fault
// are Invalid, and compile.Build reports these problems with the ones it
// finds in the other services, so one run names them all. With any other
// error the pod is nil.
func Load(ctx context.Context, opts LoadOptions) (*Pod, error) {
	file := opts.File
	if file == "" {
		file = DefaultFile
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if _, err := os.Stat(abs); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &Error{File: file, Problem: "file not found", Fix: "run claw in the pod's directory or pass -f <pod file>"}
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	dir := filepath.Dir(abs)
	profiles := opts.Profiles
	if len(profiles) == 0 {
		for _, kv := range opts.Env {
			if v, ok := strings.CutPrefix(kv, "COMPOSE_PROFILES="); ok && v != "" {
				profiles = strings.Split(v, ",")
			}
		}
	}
	project, err := loadProject(ctx, abs, dir, opts.Env, profiles, true)
	var unrunnable []string
	if err != nil && strings.Contains(err.Error(), "has neither an image nor a build context") {
		// Compile what the operator wrote (spec snippets often omit images);
		// Unrunnable tells `claw up` to refuse.
		project, err = loadProject(ctx, abs, dir, opts.Env, profiles, false)
		if err == nil {
			for _, n := range sortedServiceNames(project) {
				if sc := project.Services[n]; sc.Image == "" && sc.Build == nil {
					unrunnable = append(unrunnable, n)
				}
			}
		}
	}
	if err != nil {
		return nil, &Error{File: file, Problem: err.Error(), Fix: "correct the compose syntax (the file must load with `docker compose config`)"}
	}
	p := &Pod{File: file, Dir: dir, Project: project, Services: map[string]*Service{}, Unrunnable: unrunnable}
	for _, n := range unrunnable {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s: service %q has neither image nor build; `claw up` needs one", file, n))
	}
	// Every problem of the pod's and every service's x-claw is reported
	// in one run, not only the first.
	claw, podErr := DecodePodClaw(file, project.Extensions[ExtensionKey])
	var podProblems Errors
	if podErr != nil && !podProblems.Collect(podErr) {
		return nil, podErr
	}
	p.Claw = claw
	p.Name = claw.Name
	if p.Name == "" {
		p.Name = project.Name
	}
	for _, name := range sortedServiceNames(project) {
		sc := project.Services[name]
		svc := &Service{Name: name, Compose: sc}
		p.Services[name] = svc
		if raw, ok := sc.Extensions[ExtensionKey]; ok {
			c, err := decodeServiceClaw(file, name, &p.Claw, raw)
			if err != nil && !p.Problems.Collect(err) {
				return nil, err
			}
			svc.Claw, svc.Invalid = c, err != nil
		}
	}
	if podErr == nil {
		if err := p.checkDefaults(); err != nil && !podProblems.Collect(err) {
			return nil, err
		}
	}
	if len(podProblems) > 0 {
		// The pod's own block is wrong: its services would compile
		// against defaults it does not mean.
		return nil, append(podProblems, p.Problems...).Err()
	}
	if err := p.Problems.Err(); err != nil {
		return p, err
	}
	return p, nil
}

// checkDefaults rejects pod defaults that name services the pod does not
// have, even when no agent inherits them yet.
func (p *Pod) checkDefaults() error {
	known := strings.Join(p.ServiceNames(), ", ")
	for _, g := range p.Claw.ToolsDefaults {
		if _, ok := p.Services[g.Service]; !ok {
			return &Error{File: p.File, Key: g.Key + ".service", Problem: fmt.Sprintf("grants tools of %q, which is not a service of the pod", g.Service), Fix: "name a service defined under services: (known: " + known + ")"}
		}
	}
	for _, f := range p.Claw.FeedsDefaults {
		if _, ok := p.Services[f.Source]; f.Source != "" && !ok {
			return &Error{File: p.File, Key: f.Key + ".source", Problem: fmt.Sprintf("%q is not a service of the pod", f.Source), Fix: "name a service defined under services: (known: " + known + ")"}
		}
	}
	return nil
}

// ServiceNames returns the service names, sorted.
func (p *Pod) ServiceNames() []string { return sortedServiceNames(p.Project) }

// Agents returns the agent services, sorted by name.
func (p *Pod) Agents() []*Service {
	var out []*Service
	for _, n := range p.ServiceNames() {
		if s := p.Services[n]; s.IsAgent() {
			out = append(out, s)
		}
	}
	return out
}

func sortedServiceNames(project *types.Project) []string {
	names := make([]string, 0, len(project.Services))
	for n := range project.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func loadProject(ctx context.Context, abs, dir string, env, profiles []string, consistency bool) (*types.Project, error) {
	po, err := cli.NewProjectOptions([]string{abs},
		cli.WithWorkingDirectory(dir),
		cli.WithEnv(env),
		cli.WithEnvFiles(),
		cli.WithDotEnv,
		cli.WithProfiles(profiles),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(consistency),
	)
	if err != nil {
		return nil, err
	}
	return po.LoadProject(ctx)
}
