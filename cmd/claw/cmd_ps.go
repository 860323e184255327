package main

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"

	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

func init() { registerVerb("ps", func(f *Factory) *cobra.Command { return NewCmdPs(f, nil) }) }

// PsOptions are claw ps's inputs.
type PsOptions struct {
	PodOptions
	// JSON prints one JSON document instead of compose's table.
	JSON bool
}

// NewCmdPs builds `claw ps`; runF replaces psRun in tests.
func NewCmdPs(f *Factory, runF func(context.Context, *Factory, *PsOptions) error) *cobra.Command {
	opts := &PsOptions{}
	cmd := &cobra.Command{
		Use:   "ps [-f claw-pod.yml] [--json]",
		Short: "List the pod's containers",
		Long: `Ps lists the pod's containers with compose's table, or with --json as one
document: {pod, project, services: [{name, state, health, ports, containers}]},
from docker inspect. A service without a container has state "absent".`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return psRun(cmd.Context(), f, opts)
		},
	}
	addPodFlags(cmd, &opts.PodOptions)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the services' state, health and ports as JSON")
	return cmd
}

func psRun(ctx context.Context, f *Factory, opts *PsOptions) error {
	p, err := opts.load(ctx, f.Env)
	if err != nil {
		return err
	}
	eng, err := engineFor(ctx, f, p)
	if err != nil {
		return err
	}
	if !opts.JSON {
		return eng.Compose(ctx, "ps")
	}
	services, err := generatedServices(p.Dir, compile.GeneratedFile)
	if err != nil {
		return err
	}
	cs, err := eng.Containers(ctx)
	if err != nil {
		return err
	}
	doc := psDocument{Pod: p.Name, Project: ProjectName(p.Name), Services: psServices(services, cs)}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err = f.IO.Out.Write(termsafe.JSONDocument(b.Bytes()))
	return err
}

// psDocument is `claw ps --json`.
type psDocument struct {
	Pod      string      `json:"pod"`
	Project  string      `json:"project"`
	Services []psService `json:"services"`
}

// psService is one service: its container's state, health and ports
// (with several containers, state and health are the common value, or
// "mixed"), and the containers themselves.
type psService struct {
	Name       string      `json:"name"`
	State      string      `json:"state"`
	Health     string      `json:"health,omitempty"`
	Ports      []Port      `json:"ports"`
	Containers []Container `json:"containers"`
}

// psServices groups containers by service: every service of the generated
// file, and any other service containers belong to (a service removed
// from the pod whose container still runs).
func psServices(services []string, cs []Container) []psService {
	by := map[string]*psService{}
	for _, s := range services {
		by[s] = &psService{Name: s, State: "absent", Ports: []Port{}, Containers: []Container{}}
	}
	for _, c := range cs {
		s := by[c.Service]
		if s == nil {
			s = &psService{Name: c.Service, Ports: []Port{}, Containers: []Container{}}
			by[c.Service] = s
		}
		if len(s.Containers) == 0 {
			s.State, s.Health = c.State, c.Health
		} else {
			if s.State != c.State {
				s.State = "mixed"
			}
			if s.Health != c.Health {
				s.Health = "mixed"
			}
		}
		s.Containers = append(s.Containers, c)
		s.Ports = append(s.Ports, c.Ports...)
	}
	out := make([]psService, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
