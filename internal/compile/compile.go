package compile

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strconv"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// Result is a compiled pod: the files to write and a summary of what each
// agent may call and read.
type Result struct {
	Pod    *pod.Pod
	Agents []*Agent
	// Descriptors are the services' descriptors, sorted by service.
	Descriptors []*ServiceDescriptor
	Output      *Output
	// Perimeter is who may reach whom in the pod.
	Perimeter *Perimeter
	// Plan is what every target renders: compose.generated.yml in Output,
	// and the Kubernetes manifests (internal/kube).
	Plan *Plan
	// Warnings are non-fatal findings (the pod's and the compiler's).
	Warnings []string
	// Inputs are the digests of the local files the compile read (the
	// pod file, its .env, descriptors, agent contracts, tool manifests),
	// by path relative to the pod directory (slash-separated).
	Inputs map[string]string
}

// Agent is one compiled agent.
type Agent struct {
	ID      string
	Service string
	// Index is the replica index for services with count > 1, else -1.
	Index  int
	Cllama bool
	Tools  []ToolSummary
	Feeds  []manifest.Feed
	Policy manifest.Policy
	// Skills are the services whose skill files the agent receives.
	Skills   []string
	Surfaces []string
	Token    string
	// Models is the agent's model allow-list, "<provider>/<model>" each
	// (metadata.json "models"); empty: any model.
	Models []string
	// Budget is the agent's budget (x-claw.budget, else the pod's
	// budget-defaults; metadata.json "budget").
	Budget []manifest.Budget

	tools []manifest.Tool
	// rules are the grant conditions its tools name (tools.json "rules").
	rules       []manifest.Rule
	serviceAuth map[string]*manifest.ServiceAuth
	// serviceAuthFrom is where each credential of serviceAuth comes from,
	// as the pod file's key (Secret.From).
	serviceAuthFrom map[string]string
	skillData       map[string][]byte
	agentsMD        []byte
}

// ToolSummary is one granted tool as operators see it.
type ToolSummary struct {
	Presented   string
	Canonical   string
	Description string
	ReadOnly    bool
	// Mode is how the agent reaches the tool: manifest.ModeMediated or
	// ModeNative (tools.json "mode").
	Mode string
	// When are the rule ids under which it is available (none: always).
	When []string
	// GrantedBy names the tools: entries that granted it.
	GrantedBy []string
	// Approve is why a call of it waits for a person's decision: "always"
	// or the `approve:` expression, one per rule (none: calls run
	// without one).
	Approve []string
}

// HasNative reports whether the agent has a native tool: its runner then
// gets the MCP client configuration (see NativeEnv).
func (a *Agent) HasNative() bool {
	for _, t := range a.Tools {
		if t.Mode == manifest.ModeNative {
			return true
		}
	}
	return false
}

type builder struct {
	// providerSet is providers.json, built before the agents.
	providerSet *manifest.Providers
	pod         *pod.Pod
	opts        Options
	descs       map[string]*ServiceDescriptor
	// failed are the services whose x-claw block or descriptor has a
	// problem (reported): agents relying on them are not compiled.
	failed map[string]bool
	warns  []string
	inputs map[string]string
}

// Build compiles p. It reads the pod directory and, with Options.Images,
// local images; it writes nothing.
//
// Every problem of every service is reported in one run: those pod.Load
// found in services' x-claw blocks (Pod.Problems), each failing
// descriptor's, and each agent's first. An agent whose grants or feeds
// depend on a service that failed is left out, since it would only repeat
// that problem.
func Build(ctx context.Context, p *pod.Pod, opts Options) (*Result, error) {
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	b := &builder{pod: p, opts: opts, descs: map[string]*ServiceDescriptor{}, inputs: map[string]string{}, failed: map[string]bool{}}
	res := &Result{Pod: p, Warnings: append([]string(nil), p.Warnings...), Inputs: b.inputs}
	b.podInputs()
	problems := append(pod.Errors(nil), p.Problems...)
	// fail returns err with the problems found so far: the compile cannot
	// go on past it.
	fail := func(err error) (*Result, error) {
		if !problems.Collect(err) {
			return nil, err
		}
		return nil, problems.Err()
	}
	if _, taken := p.Services[CllamaService]; taken {
		return fail(&pod.Error{File: p.File, Service: CllamaService, Key: "services." + CllamaService, Problem: "the name is reserved for the governance proxy claw adds", Fix: "rename the service"})
	}
	if err := b.checkAgentIDs(); err != nil {
		return fail(err)
	}
	if err := b.descriptors(ctx, res, &problems); err != nil {
		return nil, err
	}
	providers, err := b.providers()
	if err == nil {
		err = b.checkDefaultProvider(providers)
	}
	if err != nil {
		return fail(err)
	}
	b.providerSet = providers
	if err := b.agents(ctx, res, &problems); err != nil {
		return nil, err
	}
	if err := problems.Err(); err != nil {
		return nil, err
	}
	if err := b.checkStarvation(); err != nil {
		return nil, err
	}
	if err := b.checkRunnerEnv(res.Agents); err != nil {
		return nil, err
	}
	if err := b.checkPerimeter(); err != nil {
		return nil, err
	}
	if res.Perimeter, err = b.perimeter(res.Agents, providers); err != nil {
		return nil, err
	}
	files, err := b.contextFiles(res.Agents, providers)
	if err != nil {
		return nil, err
	}
	if res.Plan, err = b.plan(res.Agents, res.Perimeter, providers, files); err != nil {
		return nil, err
	}
	compose, err := b.composeFile(ctx, res.Plan)
	if err != nil {
		return nil, err
	}
	res.Output = output(files, compose)
	res.Warnings = append(res.Warnings, b.warns...)
	return res, nil
}

// descriptors finds, checks and records the descriptor of every service
// that is not an agent, adding each failing service's problem to problems
// (and the service to b.failed). The error is one that is not the pod's
// (reading a file, an image).
func (b *builder) descriptors(ctx context.Context, res *Result, problems *pod.Errors) error {
	for _, name := range b.pod.ServiceNames() {
		svc := b.pod.Services[name]
		if svc.Invalid {
			// Its x-claw (describe-file, tool-manifests, …) is not known:
			// its problems are already in Pod.Problems.
			b.failed[name] = true
			continue
		}
		if svc.IsAgent() {
			continue
		}
		sd, err := b.lookupDescriptor(ctx, svc)
		if err == nil {
			sd, err = b.withToolManifests(svc, sd)
		}
		if err == nil {
			err = b.overrideAnnotations(svc, sd)
		}
		if err != nil {
			if !problems.Collect(err) {
				return err
			}
			b.failed[name] = true
			continue
		}
		if sd != nil {
			b.descs[name] = sd
			res.Descriptors = append(res.Descriptors, sd)
			if w := discoveryDrift(svc, sd); w != "" {
				b.warns = append(b.warns, w)
			}
		}
	}
	return nil
}

// agents compiles every agent into res.Agents, adding each agent
// service's first problem to problems (its other replicas would say the
// same). The error is one that is not the pod's.
func (b *builder) agents(ctx context.Context, res *Result, problems *pod.Errors) error {
	for _, svc := range b.pod.Agents() {
		if b.reliesOnFailed(svc) {
			continue
		}
		ids := AgentIDs(svc)
		for i, id := range ids {
			idx := -1
			if len(ids) > 1 {
				idx = i
			}
			a, err := b.agent(ctx, svc, id, idx)
			if err != nil {
				if !problems.Collect(err) {
					return err
				}
				break
			}
			res.Agents = append(res.Agents, a)
		}
	}
	return nil
}

// reliesOnFailed reports whether the agent's grants or feeds may depend
// on a service in b.failed: compiling it would only repeat that
// service's problem, or call a feed missing that the service provides. A
// feed by name alone may come from any service, so it relies on all.
func (b *builder) reliesOnFailed(svc *pod.Service) bool {
	if len(b.failed) == 0 || !svc.Claw.CllamaEnabled() {
		return false
	}
	grants, err := pod.ExpandGrants(b.pod.File, svc.Name, &b.pod.Claw, svc.Claw)
	if err != nil {
		return false // the agent's own problem, for agent to report
	}
	for _, g := range grants {
		if b.failed[g.Service] {
			return true
		}
	}
	feeds, err := pod.ExpandFeeds(b.pod.File, svc.Name, &b.pod.Claw, svc.Claw)
	if err != nil {
		return false
	}
	for _, f := range feeds {
		if f.Short() || b.failed[f.Source] {
			return true
		}
	}
	return false
}

// AgentIDs returns the agent ids of an agent service: its name, or
// "<service>-<i>" (i from 0) when x-claw.count is greater than 1.
func AgentIDs(svc *pod.Service) []string {
	n := 1
	if svc.Claw != nil && svc.Claw.Count > 1 {
		n = svc.Claw.Count
	}
	if n == 1 {
		return []string{svc.Name}
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = svc.Name + "-" + strconv.Itoa(i)
	}
	return ids
}

func (b *builder) checkAgentIDs() error {
	owner := map[string]string{}
	for _, n := range b.pod.ServiceNames() {
		owner[n] = n
	}
	for _, svc := range b.pod.Agents() {
		ids := AgentIDs(svc)
		for _, id := range ids {
			if !manifest.ValidAgentID(id) {
				return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "services." + svc.Name, Problem: fmt.Sprintf("agent id %q is not usable as a directory name", id), Fix: "name agent services with letters, digits, '_' and '-' only"}
			}
			if len(ids) > 1 {
				if other, clash := owner[id]; clash {
					return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "x-claw.count", Problem: fmt.Sprintf("replica id %q clashes with service %q", id, other), Fix: "rename one of the services"}
				}
				owner[id] = svc.Name
			}
		}
		if len(ids) > 1 && svc.Compose.ContainerName != "" {
			return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "container_name", Problem: "a fixed container name cannot be shared by several replicas", Fix: "remove container_name or set x-claw.count to 1"}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
