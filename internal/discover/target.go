package discover

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/clawdapus/clawgo/internal/pod"
)

// Wrapper environment (the names internal/mcpstdio reads).
const (
	envCommand   = "CLAW_MCP_STDIO_COMMAND"
	envArgs      = "CLAW_MCP_STDIO_ARGS"
	envAddr      = "CLAW_MCP_STDIO_ADDR"
	envPath      = "CLAW_MCP_STDIO_PATH"
	envAuthToken = "CLAW_MCP_STDIO_AUTH_TOKEN"
)

// DefaultPort is the wrapper's listen port when CLAW_MCP_STDIO_ADDR does not
// name one.
const DefaultPort = "8080"

// DefaultPath is the wrapper's MCP endpoint path.
const DefaultPath = "/mcp"

// Target is one stdio MCP service to discover, resolved from the pod.
type Target struct {
	// Service is the compose service name.
	Service string
	// Command and Args are x-claw.mcp-stdio.
	Command string
	Args    []string
	// Image is the service's image; empty when it only has a build.
	Image string
	// Env is the service's environment (compose-resolved, .env and
	// env_file applied). Variables without a value are left out.
	Env map[string]string
	// Volumes are the service's mounts, for the container.
	Volumes []Mount
	// Entrypoint, Cmd, User and WorkingDir are the service's overrides of
	// the image, passed to the container as compose would.
	Entrypoint []string
	Cmd        []string
	User       string
	WorkingDir string
	// Port is the wrapper's listen port inside the container; Path its MCP
	// endpoint; AuthToken the bearer it requires (empty for none).
	Port      string
	Path      string
	AuthToken string
	// Dir is the pod directory: the working directory of a local run.
	Dir string
}

// Mount is one volume of the service.
type Mount struct {
	// Type is "bind", "volume" or "tmpfs".
	Type     string
	Source   string
	Target   string
	ReadOnly bool
}

// Targets resolves the named services of p (all stdio MCP services when
// names is empty), in the order given or sorted by name. It is an error to
// name a service that does not exist or does not declare x-claw.mcp-stdio.
func Targets(p *pod.Pod, names []string) ([]Target, error) {
	if len(names) == 0 {
		for _, n := range p.ServiceNames() {
			if s := p.Services[n]; s != nil && s.Claw != nil && s.Claw.MCPStdio != nil {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			return nil, &pod.Error{File: p.File, Problem: "no service declares x-claw.mcp-stdio, so there is nothing to discover", Fix: "add `x-claw: {mcp-stdio: {command: …, args: […]}}` to the service that wraps a stdio MCP server"}
		}
	}
	out := make([]Target, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		s, ok := p.Services[n]
		if !ok {
			return nil, &pod.Error{File: p.File, Problem: fmt.Sprintf("service %q is not in the pod", n), Fix: "name a service defined under services: (known: " + strings.Join(p.ServiceNames(), ", ") + ")"}
		}
		if s.Claw == nil || s.Claw.MCPStdio == nil {
			return nil, &pod.Error{File: p.File, Service: n, Key: "x-claw.mcp-stdio", Problem: "the service does not wrap a stdio MCP server, so there is nothing to discover", Fix: "add x-claw.mcp-stdio {command, args}, or name a service that has it"}
		}
		out = append(out, targetOf(p, s))
	}
	return out, nil
}

func targetOf(p *pod.Pod, s *pod.Service) Target {
	c := s.Compose
	t := Target{
		Service: s.Name, Command: s.Claw.MCPStdio.Command, Args: append([]string{}, s.Claw.MCPStdio.Args...),
		Image: c.Image, Env: map[string]string{}, Entrypoint: c.Entrypoint, Cmd: c.Command,
		User: c.User, WorkingDir: c.WorkingDir, Port: DefaultPort, Path: DefaultPath, Dir: p.Dir,
	}
	keys := make([]string, 0, len(c.Environment))
	for k := range c.Environment {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := c.Environment[k]; v != nil {
			t.Env[k] = *v
		}
	}
	if v := t.Env[envAddr]; v != "" {
		if i := strings.LastIndex(v, ":"); i >= 0 && i+1 < len(v) {
			t.Port = v[i+1:]
		}
	}
	if v := t.Env[envPath]; v != "" {
		t.Path = v
	}
	t.AuthToken = t.Env[envAuthToken]
	for _, v := range c.Volumes {
		m := Mount{Type: v.Type, Source: v.Source, Target: v.Target, ReadOnly: v.ReadOnly}
		if m.Type == "volume" && m.Source != "" {
			// Named volumes carry the project prefix compose gives them.
			if vc, ok := p.Project.Volumes[m.Source]; ok && vc.Name != "" {
				m.Source = vc.Name
			}
		}
		t.Volumes = append(t.Volumes, m)
	}
	return t
}

// wrapperEnv is the environment the wrapper needs on top of the service's:
// the command and args from x-claw.mcp-stdio (unless the service sets them
// itself, as compile does) and, when addr is non-empty, the listen address.
func (t Target) wrapperEnv(addr string) map[string]string {
	env := make(map[string]string, len(t.Env)+3)
	for k, v := range t.Env {
		env[k] = v
	}
	if _, set := env[envCommand]; !set {
		env[envCommand] = t.Command
	}
	if _, set := env[envArgs]; !set {
		env[envArgs] = jsonArgs(t.Args)
	}
	if addr != "" {
		env[envAddr] = addr
	}
	if env[envPath] == "" {
		env[envPath] = path.Clean("/" + strings.TrimPrefix(t.Path, "/"))
	}
	return env
}
