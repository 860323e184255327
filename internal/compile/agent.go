package compile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/clawdapus/clawgo/internal/capability"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// agent projects the registry onto one agent: grants → tools, feeds,
// service credentials, skills, policy and token.
func (b *builder) agent(ctx context.Context, svc *pod.Service, id string, index int) (*Agent, error) {
	c := svc.Claw
	a := &Agent{ID: id, Service: svc.Name, Index: index, Cllama: c.CllamaEnabled(),
		serviceAuth: map[string]*manifest.ServiceAuth{}, serviceAuthFrom: map[string]string{}, skillData: map[string][]byte{}}
	md, err := b.agentContract(svc)
	if err != nil {
		return nil, err
	}
	a.agentsMD = md
	if a.Models, err = b.modelAllowList(svc); err != nil {
		return nil, err
	}
	if a.Budget = c.Budget; !c.HasBudget {
		a.Budget = b.pod.Claw.BudgetDefaults
	}
	skillFrom := map[string]bool{}
	for i, s := range c.Surfaces {
		a.Surfaces = append(a.Surfaces, s.Raw)
		if s.Scheme != "service" {
			continue
		}
		if _, ok := b.pod.Services[s.Target]; !ok {
			return nil, &pod.Error{File: b.pod.File, Service: svc.Name, Key: fmt.Sprintf("x-claw.surfaces[%d]", i), Problem: fmt.Sprintf("service %q is not in the pod", s.Target), Fix: "name a service defined under services: (known: " + strings.Join(b.pod.ServiceNames(), ", ") + ")"}
		}
		skillFrom[s.Target] = true
	}
	for _, target := range sortedKeys(c.ServiceAuth) {
		if _, ok := b.pod.Services[target]; !ok {
			return nil, &pod.Error{File: b.pod.File, Service: svc.Name, Key: "x-claw.service-auth." + target, Problem: fmt.Sprintf("%q is not a service of the pod", target), Fix: "key service-auth by the service the credential is for"}
		}
	}
	if a.Cllama {
		if err := b.agentTools(a, svc); err != nil {
			return nil, err
		}
		for _, t := range a.tools {
			skillFrom[t.Execution.Service] = true
		}
		if err := b.agentFeeds(a, svc); err != nil {
			return nil, err
		}
		if a.Policy, err = b.policy(svc); err != nil {
			return nil, err
		}
	}
	for _, target := range sortedKeys(skillFrom) {
		sd := b.descs[target]
		if sd == nil || sd.Descriptor.Skill == "" {
			continue
		}
		data, err := sd.readSkill(ctx)
		if err != nil {
			return nil, &pod.Error{File: sd.Location, Service: target, Key: "skill", Problem: fmt.Sprintf("cannot read %s: %v", sd.Descriptor.Skill, err), Fix: "ship the skill file next to the descriptor or fix the skill path"}
		}
		a.Skills = append(a.Skills, target)
		a.skillData[target] = data
	}
	tok, err := b.token(id)
	if err != nil {
		return nil, err
	}
	a.Token = tok
	return a, nil
}

// agentContract reads x-claw.agent: a file, or a directory holding
// AGENTS.md. A missing contract is an error; no key means no AGENTS.md.
func (b *builder) agentContract(svc *pod.Service) ([]byte, error) {
	rel := svc.Claw.Agent
	if rel == "" {
		return nil, nil
	}
	full := rel
	if !filepath.IsAbs(full) {
		full = filepath.Join(b.pod.Dir, filepath.FromSlash(rel))
	}
	if st, err := os.Stat(full); err == nil && st.IsDir() {
		full = filepath.Join(full, "AGENTS.md")
	}
	data, err := readBounded(full, 1<<20)
	if err != nil {
		return nil, &pod.Error{File: b.pod.File, Service: svc.Name, Key: "x-claw.agent", Problem: fmt.Sprintf("cannot read the agent contract %s: %v", rel, trimPathErr(err)), Fix: "point agent at a markdown file (or a directory holding AGENTS.md), relative to the pod file"}
	}
	b.input(full, data)
	return data, nil
}

func (b *builder) agentTools(a *Agent, svc *pod.Service) error {
	entries, err := pod.ExpandGrants(b.pod.File, svc.Name, &b.pod.Claw, svc.Claw)
	if err != nil {
		return err
	}
	presented := map[string]string{}
	for _, g := range pod.NormaliseGrants(entries) {
		key := g.Keys[0]
		target, ok := b.pod.Services[g.Service]
		if !ok {
			return &pod.Error{File: b.pod.File, Service: svc.Name, Key: key + ".service", Problem: fmt.Sprintf("grants tools of %q, which is not a service of the pod", g.Service), Fix: "name a service defined under services: (known: " + strings.Join(b.pod.ServiceNames(), ", ") + ")"}
		}
		sd := b.descs[g.Service]
		if sd == nil {
			return b.noDescriptor(svc.Name, key, target)
		}
		d := sd.Descriptor
		var chosen []capability.Tool
		if g.All {
			chosen = d.Tools
			if len(chosen) == 0 {
				b.warns = append(b.warns, fmt.Sprintf("%s: service %q: %s: %q declares no tools (descriptor %s)", b.pod.File, svc.Name, key, g.Service, sd.Location))
			}
		} else {
			for _, name := range g.Tools {
				if d.Tool(name) == nil {
					at := key
					if k, ok := g.NameKeys[name]; ok {
						at = k
					}
					return &pod.Error{File: b.pod.File, Service: svc.Name, Key: at + ".allow", Problem: fmt.Sprintf("tool %q is not declared by %q (descriptor %s declares: %s)", name, g.Service, sd.Location, toolNames(d)), Fix: pod.DidYouMean(name, declaredTools(d)) + "grant one of the declared tools, or update the descriptor"}
				}
			}
			for _, t := range d.Tools {
				if contains(g.Tools, t.Name) {
					chosen = append(chosen, t)
				}
			}
		}
		if len(chosen) == 0 {
			continue
		}
		// Tools with their own endpoint (CKP https:// sources) do not need
		// the service to expose a port.
		base, baseErr := b.baseURL(target)
		auth, err := b.auth(a, svc, target.Name)
		if err != nil {
			return err
		}
		for _, t := range chosen {
			if baseErr != nil && t.Endpoint == nil {
				return baseErr
			}
			mt := projectTool(g.Service, base, d, t, auth)
			if mt.Mode, err = pod.ToolMode(b.pod.File, svc.Name, &b.pod.Claw, entries, g.Service, t.Name); err != nil {
				return err
			}
			for _, w := range pod.ToolWhen(entries, g.Service, t.Name) {
				mt.When = append(mt.When, a.ruleID(b.pod.File, svc.Name, w))
			}
			mt.Approve = b.approvals(svc, entries, g.Service, t.Name, mt.Annotations)
			p := capability.PresentedName(mt.Name)
			if other, clash := presented[p]; clash {
				return &pod.Error{File: b.pod.File, Service: svc.Name, Key: key, Problem: fmt.Sprintf("tools %q and %q are both presented to the model as %q", other, mt.Name, p), Fix: "grant only one of them, or rename one in its descriptor"}
			}
			presented[p] = mt.Name
			a.tools = append(a.tools, mt)
			ts := ToolSummary{Presented: p, Canonical: mt.Name, Description: mt.Description, ReadOnly: mt.Annotations.IsReadOnly(), Mode: mt.Mode, When: mt.When, GrantedBy: g.Keys}
			for _, ap := range mt.Approve {
				if ap.Always {
					ts.Approve = append(ts.Approve, "always")
				} else {
					ts.Approve = append(ts.Approve, ap.When)
				}
			}
			a.Tools = append(a.Tools, ts)
		}
	}
	return nil
}

func (b *builder) noDescriptor(agent, key string, target *pod.Service) error {
	fix := fmt.Sprintf("add x-claw.describe-file to %q, or put %s in its build context", target.Name, DescribeFileName)
	if target.Claw != nil && target.Claw.MCPStdio != nil {
		fix = fmt.Sprintf("run `claw discover %s` to snapshot its tools", target.Name)
	} else if b.opts.Images == nil && target.Compose.Image != "" {
		fix += "; descriptors baked into images are read by `claw up` or `claw compile --images`"
	}
	return &pod.Error{File: b.pod.File, Service: agent, Key: key + ".service", Problem: fmt.Sprintf("no descriptor found for %q (looked for x-claw.describe-file, %s/%s.claw-describe.json, image labels, %s in the build context)", target.Name, DiscoveredDir, target.Name, DescribeFileName), Fix: fix}
}

func projectTool(service, base string, d *capability.Descriptor, t capability.Tool, auth *manifest.Auth) manifest.Tool {
	mt := manifest.Tool{
		Name: service + "." + t.Name, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
	}
	e := &mt.Execution
	e.Service, e.BaseURL, e.Auth, e.TimeoutMS, e.Retry = service, base, auth, t.TimeoutMS, t.Retry
	if t.HTTP != nil {
		e.Transport, e.Method, e.Path, e.Body, e.BodyKey = manifest.TransportHTTP, t.HTTP.Method, t.HTTP.Path, t.HTTP.Body, t.HTTP.BodyKey
	} else {
		e.Transport, e.ToolName = manifest.TransportMCP, t.Name
		if d.MCP != nil {
			e.Path = d.MCP.Path
		}
		if t.RemoteName != "" {
			e.ToolName = t.RemoteName
		}
		if t.Endpoint != nil {
			e.BaseURL, e.Path = t.Endpoint.BaseURL, t.Endpoint.Path
		}
	}
	return mt
}

// baseURL is http://<service>:<port> with the first exposed port, else the
// first published container port; stdio MCP wrappers default to 8080.
func (b *builder) baseURL(svc *pod.Service) (string, error) {
	port := ""
	if len(svc.Compose.Expose) > 0 {
		port = svc.Compose.Expose[0]
		if i := strings.IndexAny(port, "/-"); i >= 0 {
			port = port[:i]
		}
	} else if len(svc.Compose.Ports) > 0 {
		port = fmt.Sprint(svc.Compose.Ports[0].Target)
	} else if svc.Claw != nil && svc.Claw.MCPStdio != nil {
		port = "8080" // the wrapper's default listen port
		if v := svc.Compose.Environment[envMCPStdioAddr]; v != nil {
			if i := strings.LastIndex(*v, ":"); i >= 0 && i+1 < len(*v) {
				port = (*v)[i+1:]
			}
		}
	}
	if port == "" || port == "0" {
		return "", &pod.Error{File: b.pod.File, Service: svc.Name, Key: "expose", Problem: "the service exposes no port, so cllama cannot reach it", Fix: "add `expose: [\"<port>\"]` with the port the service listens on"}
	}
	return "http://" + svc.Name + ":" + port, nil
}

// auth resolves the credential an agent's calls to target carry: a
// projected x-claw.service-auth entry wins; otherwise the descriptor's
// auth.env, resolved from the target service's own environment only (the
// pod file may fill it from .env with ${VAR}). Never from the operator's
// wider environment: a descriptor, possibly baked into a third-party image,
// must not be able to name an unrelated secret and receive it as a bearer.
// A missing value is an error naming the variable.
func (b *builder) auth(a *Agent, agentSvc *pod.Service, target string) (*manifest.Auth, error) {
	if sa, ok := a.serviceAuth[target]; ok {
		return sa.Bearer(), nil
	}
	if spec, ok := agentSvc.Claw.ServiceAuth[target]; ok {
		sa := &manifest.ServiceAuth{Service: target, AuthType: "bearer", Token: spec.Token, Principal: spec.Principal}
		a.serviceAuth[target] = sa
		a.serviceAuthFrom[target] = "services." + agentSvc.Name + ".x-claw.service-auth." + target
		return sa.Bearer(), nil
	}
	sd := b.descs[target]
	if t := b.pod.Services[target]; (sd == nil || sd.Descriptor.Auth == nil) && t != nil && t.Claw != nil && t.Claw.MCPStdio != nil {
		// A stdio MCP wrapper guarded by its own bearer: cllama presents it.
		if v := t.Compose.Environment[envMCPStdioAuthToken]; v != nil && *v != "" {
			sa := &manifest.ServiceAuth{Service: target, AuthType: "bearer", Token: *v}
			a.serviceAuth[target] = sa
			a.serviceAuthFrom[target] = envKey(target, envMCPStdioAuthToken)
			return sa.Bearer(), nil
		}
	}
	if sd == nil || sd.Descriptor.Auth == nil || sd.Descriptor.Auth.Type != capability.AuthBearer {
		return nil, nil
	}
	env := sd.Descriptor.Auth.Env
	val, ok := b.serviceEnv(target, env)
	if !ok || val == "" {
		return nil, &pod.Error{File: sd.Location, Service: target, Key: "auth.env", Problem: fmt.Sprintf("variable %s (the bearer token for %q) is not set or empty", env, target), Fix: fmt.Sprintf("set %s in the %q service's environment (for example `%s: ${%s}` with the value in .env), or project a token with x-claw.service-auth on %q", env, target, env, env, agentSvc.Name)}
	}
	// A descriptor (possibly baked into a third-party image) must not make
	// claw hand a model provider's key to its service as a bearer.
	provider, isKey := b.providerKeyVars()[env]
	if !isKey {
		provider, isKey = heldSecret(val, b.providerSecrets())
	}
	if isKey {
		return nil, &pod.Error{File: sd.Location, Service: target, Key: "auth.env", Problem: fmt.Sprintf("%s holds the %s provider key, which only cllama may hold (credential starvation)", env, provider), Fix: fmt.Sprintf("name the variable holding the service's own bearer token, or project one with x-claw.service-auth on %q", agentSvc.Name)}
	}
	sa := &manifest.ServiceAuth{Service: target, AuthType: "bearer", Token: val}
	a.serviceAuth[target] = sa
	a.serviceAuthFrom[target] = envKey(target, env)
	return sa.Bearer(), nil
}

// envKey is the pod file's key of a variable of a service's environment.
func envKey(service, name string) string {
	return "services." + service + ".environment." + name
}

// Environment of stdio MCP wrapper services (claw-mcp-stdio) that affects
// how cllama reaches them.
const (
	envMCPStdioAddr      = "CLAW_MCP_STDIO_ADDR"
	envMCPStdioAuthToken = "CLAW_MCP_STDIO_AUTH_TOKEN"
)

// serviceEnv is a variable of one service's own (interpolated) environment.
func (b *builder) serviceEnv(service, name string) (string, bool) {
	if s, ok := b.pod.Services[service]; ok {
		if v, ok := s.Compose.Environment[name]; ok && v != nil {
			return *v, true
		}
	}
	return "", false
}

func (b *builder) policy(svc *pod.Service) (manifest.Policy, error) {
	var p manifest.Policy
	apply := func(dst *int, vals ...*int) {
		for _, v := range vals {
			if v != nil {
				*dst = *v
			}
		}
	}
	pp, sp := b.pod.Claw.ToolPolicy, svc.Claw.ToolPolicy
	apply(&p.MaxRounds, pp.MaxRounds, sp.MaxRounds)
	apply(&p.TimeoutPerToolMS, pp.TimeoutPerToolMS, sp.TimeoutPerToolMS)
	apply(&p.TotalTimeoutMS, pp.TotalTimeoutMS, sp.TotalTimeoutMS)
	apply(&p.MaxToolResultBytes, pp.MaxToolResultBytes, sp.MaxToolResultBytes)
	apply(&p.MaxToolCallsPerRound, pp.MaxToolCallsPerRound, sp.MaxToolCallsPerRound)
	apply(&p.MaxToolCallsPerTurn, pp.MaxToolCallsPerTurn, sp.MaxToolCallsPerTurn)
	apply(&p.MaxParallelCalls, pp.MaxParallel, sp.MaxParallel)
	apply(&p.ResultTTLMS, pp.ResultTTLMS, sp.ResultTTLMS)
	apply(&p.ApprovalTimeoutMS, pp.ApprovalTimeoutMS, sp.ApprovalTimeoutMS)
	p = p.WithDefaults()
	if p.TotalTimeoutMS < p.TimeoutPerToolMS {
		// Valid: the total governs, each call capped at what is left of
		// it. Worth a word, since the per-tool timeout then never applies.
		b.warns = append(b.warns, fmt.Sprintf("%s: service %q: x-claw.tool-policy.total-timeout-ms: the effective total timeout %dms is below the per-tool timeout %dms (after pod defaults): the total governs, so no tool call runs longer than %dms",
			b.pod.File, svc.Name, p.TotalTimeoutMS, p.TimeoutPerToolMS, p.TotalTimeoutMS))
	}
	if p.MaxToolCallsPerTurn < p.MaxToolCallsPerRound {
		return p, &pod.Error{File: b.pod.File, Service: svc.Name, Key: "x-claw.tool-policy.max-tool-calls-per-turn", Problem: fmt.Sprintf("the effective cap of %d calls per turn is below the effective cap of %d calls per round (pod defaults applied; the built-in caps are %d per round and %d per turn)", p.MaxToolCallsPerTurn, p.MaxToolCallsPerRound, manifest.DefaultMaxToolCallsPerRound, manifest.DefaultMaxToolCallsPerTurn), Fix: "raise max-tool-calls-per-turn or lower max-tool-calls-per-round"}
	}
	return p, p.Validate("tool-policy")
}

// toolNames lists the tools d declares, for errors: sorted, or "none".
func toolNames(d *capability.Descriptor) string {
	if len(d.Tools) == 0 {
		return "none"
	}
	return strings.Join(declaredTools(d), ", ")
}

// declaredTools are the names of the tools d declares, sorted.
func declaredTools(d *capability.Descriptor) []string {
	names := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		names[i] = t.Name
	}
	sort.Strings(names)
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func trimPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// ruleID is the id of condition w in the agent's tools.json rules, added
// on first use: "r1", "r2", ... in order of first appearance, so a
// recompile of the same pod writes the same ids.
func (a *Agent) ruleID(file, service string, w pod.WhenRef) string {
	source := fmt.Sprintf("%s: service %q: %s.when", filepath.Base(file), service, w.Key)
	for _, r := range a.rules {
		if r.When == w.When && r.Source == source {
			return r.ID
		}
	}
	id := fmt.Sprintf("r%d", len(a.rules)+1)
	a.rules = append(a.rules, manifest.Rule{ID: id, When: w.When, Source: source})
	return id
}
