// Package inspect builds the operator's view of a compiled pod for `claw
// inspect`: per service its descriptor (tools marked read-only or
// side-effecting, feeds, endpoints, auth, where the descriptor was found);
// per agent its effective tools (presented and canonical names, the grant
// entries that gave them), feeds, tool policy, and where each came from
// (spec 000 §1: endpoint details are for operators, here, never for
// agents). It reads a compile.Result and the generated files; it neither
// compiles nor writes.
package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// Report is the whole view. Field names are stable: `claw inspect --json`
// prints them.
type Report struct {
	Pod      string    `json:"pod"`
	File     string    `json:"file"`
	Services []Service `json:"services"`
	Agents   []Agent   `json:"agents"`
	// Warnings are differences between the pod as it compiles now and the
	// generated files on disk, and descriptors changed since compiling.
	Warnings []string `json:"warnings,omitempty"`
}

// Source says where a descriptor came from: Kind is one of compile's
// Source* constants (describe-file, discovered, image-label, image,
// build-context); Location the file relative to the pod directory, or
// "image <ref>:<path>".
type Source struct {
	Kind     string `json:"kind"`
	Location string `json:"location"`
}

func (s Source) String() string { return s.Location + " (" + s.Kind + ")" }

// Service is one non-agent service and its descriptor.
type Service struct {
	Name string `json:"name"`
	// Descriptor is nil when the service has none.
	Descriptor  *Source       `json:"descriptor"`
	Version     int           `json:"version,omitempty"`
	Description string        `json:"description,omitempty"`
	Auth        *Auth         `json:"auth,omitempty"`
	MCP         string        `json:"mcp,omitempty"` // the MCP endpoint path when tools go through MCP
	MCPStdio    *pod.MCPStdio `json:"mcp_stdio,omitempty"`
	Tools       []ServiceTool `json:"tools"`
	Feeds       []ServiceFeed `json:"feeds"`
	Endpoints   []Endpoint    `json:"endpoints"`
	Skill       string        `json:"skill,omitempty"`
	// ReachedBy lists who can open connections to the service: cllama
	// (when it calls the service) and the agents that name it as a
	// surface (the perimeter).
	ReachedBy []string `json:"reached_by"`
}

// Auth is how callers authenticate to a service: its type and the variable
// naming the token (never the token).
type Auth struct {
	Type string `json:"type"`
	Env  string `json:"env,omitempty"`
}

// Effects of a tool, from its readOnly annotation (spec 000 "Tool
// annotations").
const (
	EffectReadOnly   = "read-only"
	EffectSideEffect = "side-effect"
)

// ServiceTool is one tool a descriptor declares.
type ServiceTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Effect      string `json:"effect"`
	// Call is how cllama runs it: "GET /path" or "mcp <tool>".
	Call string `json:"call"`
	// GrantedTo lists the agents the tool is granted to.
	GrantedTo []string `json:"granted_to"`
}

// ServiceFeed is one feed a descriptor declares.
type ServiceFeed struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	TTL         int    `json:"ttl"`
	Description string `json:"description,omitempty"`
}

// Endpoint is operator documentation of one route.
type Endpoint struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Description string `json:"description,omitempty"`
}

// Agent is one compiled agent.
type Agent struct {
	ID      string `json:"id"`
	Service string `json:"service"`
	Cllama  bool   `json:"cllama"`
	// Tools are the effective managed tools, in tools.json order.
	Tools    []AgentTool `json:"tools"`
	Feeds    []AgentFeed `json:"feeds"`
	Policy   *Policy     `json:"policy,omitempty"`
	Skills   []string    `json:"skills"`
	Surfaces []string    `json:"surfaces"`
	// Reaches is what the agent's network reaches (cllama, its surfaces),
	// and Egress whether it also has a route out of the pod.
	Reaches []Reach `json:"reaches"`
	Egress  bool    `json:"egress"`
}

// Reach is one service an agent reaches and why, as the pod file says it.
type Reach struct {
	Service string   `json:"service"`
	From    []string `json:"from"`
}

// AgentTool is one tool an agent may call.
type AgentTool struct {
	// Presented is the name the model sees; Canonical "<service>.<tool>".
	Presented string `json:"presented"`
	Canonical string `json:"canonical"`
	Service   string `json:"service"`
	Effect    string `json:"effect"`
	// Mode is "mediated" (cllama offers it to the model and runs its
	// calls) or "native" (the runner calls it on cllama's /mcp, by its
	// canonical name).
	Mode string `json:"mode"`
	// GrantedBy are the grant entries that gave the tool.
	GrantedBy []Grant `json:"granted_by"`
	// When are the conditions (CEL) under which the tool is available,
	// while any holds (tools.json "rules"); none: always, which is also
	// the case when one entry granting it has no when:.
	When []string `json:"when,omitempty"`
	// From is the descriptor that declares the tool.
	From *Source `json:"from"`
}

// Grant is one tools: entry and the rule it applies.
type Grant struct {
	// Key is where the entry is written ("x-claw.tools[1]",
	// "x-claw.tools-defaults[0]").
	Key string `json:"key"`
	// Rule says what it grants and why it applies: "service tools:
	// trading-api allow all", "tools-defaults (inherited: no tools: key):
	// trading-api allow [get_market_context]".
	Rule string `json:"rule"`
	// When is the entry's when: condition (CEL), if it has one.
	When string `json:"when,omitempty"`
}

// AgentFeed is one feed an agent subscribes to.
type AgentFeed struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Path   string `json:"path"`
	TTL    int    `json:"ttl"`
	// SubscribedBy is the feeds: entry that subscribes it, with its rule.
	SubscribedBy Grant `json:"subscribed_by"`
	// DeclaredBy is the descriptor declaring the feed; nil when the pod
	// file defines it ({source, path}).
	DeclaredBy *Source `json:"declared_by"`
}

// Policy is the agent's effective tool policy, each limit with where it
// came from.
type Policy struct {
	MaxRounds            Limit `json:"max_rounds"`
	TimeoutPerToolMS     Limit `json:"timeout_per_tool_ms"`
	TotalTimeoutMS       Limit `json:"total_timeout_ms"`
	MaxToolResultBytes   Limit `json:"max_tool_result_bytes"`
	MaxToolCallsPerRound Limit `json:"max_tool_calls_per_round"`
	MaxToolCallsPerTurn  Limit `json:"max_tool_calls_per_turn"`
	MaxParallelCalls     Limit `json:"max_parallel_calls"`
}

// Limit is one policy value and its origin: "service x-claw.tool-policy",
// "pod x-claw.tool-policy" or "default".
type Limit struct {
	Value int    `json:"value"`
	From  string `json:"from"`
}

// Disk is the compiled pod on disk that a report compares with what the
// pod compiles to now.
type Disk struct {
	// Dir is the pod directory; ContextDir the compiled agents' context
	// directory, relative to it (staged, or live for a pod compiled by an
	// earlier claw).
	Dir, ContextDir string
	// Changed reports whether a descriptor file (its location relative to
	// Dir) changed since the pod was compiled; nil means never.
	Changed func(location string) bool
}

// Build makes the report of a compiled pod, comparing res with the
// compiled files on disk.
func Build(res *compile.Result, disk Disk) (*Report, error) {
	dir := disk.Dir
	p := res.Pod
	rep := &Report{Pod: p.Name, File: p.File, Services: []Service{}, Agents: []Agent{}}
	descs := map[string]*compile.ServiceDescriptor{}
	for _, sd := range res.Descriptors {
		descs[sd.Service] = sd
	}
	grantedTo := map[string][]string{}
	for _, a := range res.Agents {
		for _, t := range a.Tools {
			grantedTo[t.Canonical] = append(grantedTo[t.Canonical], a.ID)
		}
	}
	for _, name := range p.ServiceNames() {
		svc := p.Services[name]
		if svc.IsAgent() {
			continue
		}
		s := service(svc, descs[name], grantedTo)
		s.ReachedBy = reachedBy(res.Perimeter, name)
		rep.Services = append(rep.Services, s)
	}
	for i, a := range res.Agents {
		ag, err := agent(p, a, descs)
		if err != nil {
			return nil, err
		}
		ag.Reaches = []Reach{}
		if res.Perimeter != nil && i < len(res.Perimeter.Agents) {
			ar := res.Perimeter.Agents[i]
			for _, r := range ar.Reaches {
				ag.Reaches = append(ag.Reaches, Reach{Service: r.Service, From: r.From})
			}
			ag.Egress = ar.Egress
		}
		rep.Agents = append(rep.Agents, ag)
		rep.Warnings = append(rep.Warnings, compareDisk(filepath.Join(dir, filepath.FromSlash(disk.ContextDir)), a)...)
	}
	for _, sd := range res.Descriptors {
		if sd.Kind == compile.SourceImage || sd.Kind == compile.SourceImageLabel {
			continue
		}
		if disk.Changed != nil && disk.Changed(sd.Location) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("descriptor %s of %q changed after the pod was compiled; run `claw compile`", sd.Location, sd.Service))
		}
	}
	return rep, nil
}

// reachedBy lists who reaches service in the perimeter: cllama first,
// then agents in order.
func reachedBy(p *compile.Perimeter, service string) []string {
	out := []string{}
	if p == nil {
		return out
	}
	if slices.ContainsFunc(p.Cllama, func(r compile.Reach) bool { return r.Service == service }) {
		out = append(out, compile.CllamaService)
	}
	for _, a := range p.Agents {
		if slices.ContainsFunc(a.Reaches, func(r compile.Reach) bool { return r.Service == service }) {
			out = append(out, a.Agent)
		}
	}
	return out
}

func service(svc *pod.Service, sd *compile.ServiceDescriptor, grantedTo map[string][]string) Service {
	s := Service{Name: svc.Name, Tools: []ServiceTool{}, Feeds: []ServiceFeed{}, Endpoints: []Endpoint{}}
	if svc.Claw != nil {
		s.MCPStdio = svc.Claw.MCPStdio
	}
	if sd == nil {
		return s
	}
	d := sd.Descriptor
	s.Descriptor = &Source{Kind: sd.Kind, Location: sd.Location}
	s.Version, s.Description, s.Skill = d.Version, d.Description, d.Skill
	if d.Auth != nil {
		s.Auth = &Auth{Type: d.Auth.Type, Env: d.Auth.Env}
	}
	if d.MCP != nil {
		s.MCP = d.MCP.Path
	}
	for _, t := range d.Tools {
		call := ""
		if t.HTTP != nil {
			call = t.HTTP.Method + " " + t.HTTP.Path
		} else if d.MCP != nil {
			call = "mcp " + t.Name + " at " + d.MCP.Path
		}
		to := grantedTo[svc.Name+"."+t.Name]
		if to == nil {
			to = []string{}
		}
		s.Tools = append(s.Tools, ServiceTool{Name: t.Name, Description: t.Description, Effect: effect(t.Annotations), Call: call, GrantedTo: to})
	}
	for _, f := range d.Feeds {
		s.Feeds = append(s.Feeds, ServiceFeed{Name: f.Name, Path: f.Path, TTL: f.TTL, Description: f.Description})
	}
	for _, e := range d.Endpoints {
		s.Endpoints = append(s.Endpoints, Endpoint{Method: e.Method, Path: e.Path, Description: e.Description})
	}
	return s
}

func effect(a *manifest.Annotations) string {
	if a.IsReadOnly() {
		return EffectReadOnly
	}
	return EffectSideEffect
}

func agent(p *pod.Pod, a *compile.Agent, descs map[string]*compile.ServiceDescriptor) (Agent, error) {
	svc := p.Services[a.Service]
	ag := Agent{ID: a.ID, Service: a.Service, Cllama: a.Cllama, Tools: []AgentTool{}, Feeds: []AgentFeed{},
		Skills: nonNil(a.Skills), Surfaces: nonNil(a.Surfaces)}
	if !a.Cllama || svc == nil || svc.Claw == nil {
		return ag, nil
	}
	grants, err := pod.ExpandGrants(p.File, svc.Name, &p.Claw, svc.Claw)
	if err != nil {
		return ag, err
	}
	byKey := map[string]pod.GrantEntry{}
	for _, g := range grants {
		byKey[g.Key] = g
	}
	for _, t := range a.Tools {
		service, tool, _ := manifest.SplitToolName(t.Canonical)
		at := AgentTool{Presented: t.Presented, Canonical: t.Canonical, Service: service, Effect: EffectSideEffect, Mode: t.Mode}
		if t.ReadOnly {
			at.Effect = EffectReadOnly
		}
		// The compiler lists every entry naming the service; keep those
		// that grant this tool.
		for _, k := range t.GrantedBy {
			if g, ok := byKey[k]; ok && (g.All || slices.Contains(g.Names, tool)) {
				at.GrantedBy = append(at.GrantedBy, Grant{Key: k, Rule: grantRule(svc.Claw, k, g), When: g.When})
			}
		}
		if at.GrantedBy == nil {
			for _, k := range t.GrantedBy {
				at.GrantedBy = append(at.GrantedBy, Grant{Key: k, Rule: grantRule(svc.Claw, k, byKey[k]), When: byKey[k].When})
			}
		}
		for _, w := range pod.ToolWhen(grants, service, tool) {
			at.When = append(at.When, w.When)
		}
		if sd := descs[service]; sd != nil && sd.Descriptor.Tool(tool) != nil {
			at.From = &Source{Kind: sd.Kind, Location: sd.Location}
		}
		ag.Tools = append(ag.Tools, at)
	}
	feeds, err := pod.ExpandFeeds(p.File, svc.Name, &p.Claw, svc.Claw)
	if err != nil {
		return ag, err
	}
	for _, f := range a.Feeds {
		af := AgentFeed{Name: f.Name, Source: f.Source, Path: f.Path, TTL: f.TTL}
		for _, e := range feeds {
			if feedEntryMatches(e, f) {
				af.SubscribedBy = Grant{Key: e.Key, Rule: feedRule(svc.Claw, e)}
				break
			}
		}
		if sd := descs[f.Source]; sd != nil {
			for _, df := range sd.Descriptor.Feeds {
				if df.Path == f.Path {
					af.DeclaredBy = &Source{Kind: sd.Kind, Location: sd.Location}
					break
				}
			}
		}
		ag.Feeds = append(ag.Feeds, af)
	}
	pol := policy(a.Policy, p.Claw.ToolPolicy, svc.Claw.ToolPolicy)
	ag.Policy = &pol
	return ag, nil
}

// grantRule describes a grant entry: whether it is the service's own
// tools: entry or a pod default (inherited because the service declares
// no tools:, or spliced with `...`), and what it allows.
func grantRule(sc *pod.ServiceClaw, key string, g pod.GrantEntry) string {
	allow := "allow all"
	if !g.All {
		allow = "allow [" + strings.Join(g.Names, ", ") + "]"
	}
	what := g.Service + " " + allow
	if !strings.HasPrefix(key, "x-claw.tools-defaults") {
		return "service tools: " + what
	}
	if sc.HasTools {
		return "tools-defaults (spliced by `...`): " + what
	}
	return "tools-defaults (inherited: the service has no tools: key): " + what
}

func feedRule(sc *pod.ServiceClaw, e pod.FeedEntry) string {
	what := e.Name
	if e.Source != "" {
		what = e.Source + path.Clean("/"+e.Path)
		if e.Path == "" {
			what = e.Source + " feed " + e.Name
		}
	}
	if !strings.HasPrefix(e.Key, "x-claw.feeds-defaults") {
		return "service feeds: " + what
	}
	if sc.HasFeeds {
		return "feeds-defaults (spliced by `...`): " + what
	}
	return "feeds-defaults (inherited: the service has no feeds: key): " + what
}

// feedEntryMatches reports whether a feeds: entry resolves to f: a short
// name or {source, name} names it, {source, path} points at it.
func feedEntryMatches(e pod.FeedEntry, f manifest.Feed) bool {
	if e.Spread {
		return false
	}
	if e.Short() {
		return e.Name == f.Name
	}
	if e.Source != f.Source {
		return false
	}
	if e.Path == "" {
		return e.Name == f.Name
	}
	return e.Path == f.Path && (e.Name == "" || e.Name == f.Name)
}

func policy(eff manifest.Policy, podP, svcP pod.PolicySpec) Policy {
	lim := func(v int, s, p *int) Limit {
		switch {
		case s != nil:
			return Limit{v, "service x-claw.tool-policy"}
		case p != nil:
			return Limit{v, "pod x-claw.tool-policy"}
		}
		return Limit{v, "default"}
	}
	return Policy{
		MaxRounds:            lim(eff.MaxRounds, svcP.MaxRounds, podP.MaxRounds),
		TimeoutPerToolMS:     lim(eff.TimeoutPerToolMS, svcP.TimeoutPerToolMS, podP.TimeoutPerToolMS),
		TotalTimeoutMS:       lim(eff.TotalTimeoutMS, svcP.TotalTimeoutMS, podP.TotalTimeoutMS),
		MaxToolResultBytes:   lim(eff.MaxToolResultBytes, svcP.MaxToolResultBytes, podP.MaxToolResultBytes),
		MaxToolCallsPerRound: lim(eff.MaxToolCallsPerRound, svcP.MaxToolCallsPerRound, podP.MaxToolCallsPerRound),
		MaxToolCallsPerTurn:  lim(eff.MaxToolCallsPerTurn, svcP.MaxToolCallsPerTurn, podP.MaxToolCallsPerTurn),
		MaxParallelCalls:     lim(eff.MaxParallelCalls, svcP.MaxParallel, podP.MaxParallel),
	}
}

// compareDisk reports where an agent's generated tools.json and
// feeds.json under ctxDir differ from what the pod compiles to now.
func compareDisk(ctxDir string, a *compile.Agent) []string {
	if !a.Cllama {
		return nil
	}
	ctx := filepath.Join(ctxDir, a.ID)
	var want, have []string
	for _, t := range a.Tools {
		want = append(want, t.Canonical)
	}
	data, err := os.ReadFile(filepath.Join(ctx, "tools.json"))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return []string{fmt.Sprintf("agent %s: %v", a.ID, err)}
	default:
		var tm manifest.Tools
		if err := json.Unmarshal(data, &tm); err != nil {
			return []string{fmt.Sprintf("agent %s: tools.json: %v; run `claw compile`", a.ID, err)}
		}
		for _, t := range tm.Tools {
			have = append(have, t.Name)
		}
	}
	var out []string
	sort.Strings(want)
	sort.Strings(have)
	if !slices.Equal(want, have) {
		out = append(out, fmt.Sprintf("agent %s: the generated tools.json grants [%s], the pod now grants [%s]; run `claw compile`", a.ID, strings.Join(have, ", "), strings.Join(want, ", ")))
	}
	var wantF, haveF []string
	for _, f := range a.Feeds {
		wantF = append(wantF, f.Name)
	}
	if data, err := os.ReadFile(filepath.Join(ctx, "feeds.json")); err == nil {
		if fs, err := manifest.ParseFeeds(data); err == nil {
			for _, f := range fs {
				haveF = append(haveF, f.Name)
			}
		}
	}
	sort.Strings(wantF)
	sort.Strings(haveF)
	if !slices.Equal(wantF, haveF) {
		out = append(out, fmt.Sprintf("agent %s: the generated feeds.json subscribes [%s], the pod now subscribes [%s]; run `claw compile`", a.ID, strings.Join(haveF, ", "), strings.Join(wantF, ", ")))
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Select narrows the report to one service or agent: an agent id, an agent
// service (all its replicas) or a non-agent service. It reports whether
// name matched.
func (r *Report) Select(name string) bool {
	var svcs []Service
	var ags []Agent
	for _, s := range r.Services {
		if s.Name == name {
			svcs = append(svcs, s)
		}
	}
	for _, a := range r.Agents {
		if a.ID == name || a.Service == name {
			ags = append(ags, a)
		}
	}
	if svcs == nil && ags == nil {
		return false
	}
	r.Services, r.Agents = nonNilSlice(svcs), nonNilSlice(ags)
	return true
}

// Names lists what Select accepts.
func (r *Report) Names() []string {
	var out []string
	for _, s := range r.Services {
		out = append(out, s.Name)
	}
	for _, a := range r.Agents {
		out = append(out, a.ID)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
