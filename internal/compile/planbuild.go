package compile

import (
	"encoding/json"
	"fmt"
	"net"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// plan builds the pod's Plan from its compiled agents, perimeter,
// providers and context files (every output file but the compose file).
// It decides everything the targets render; it adds no warnings.
func (b *builder) plan(agents []*Agent, perim *Perimeter, providers *manifest.Providers, files []File) (*Plan, error) {
	p := &Plan{Pod: b.pod.Name, Perimeter: perim}
	byService := map[string][]*Agent{}
	for _, a := range agents {
		byService[a.Service] = append(byService[a.Service], a)
	}
	for _, name := range b.pod.ServiceNames() {
		svc := b.pod.Services[name]
		if !svc.IsAgent() {
			w := b.workload(svc, name)
			if svc.Claw != nil && svc.Claw.MCPStdio != nil {
				mcpStdioEnv(w, svc.Claw.MCPStdio)
			}
			p.Workloads = append(p.Workloads, w)
			continue
		}
		for _, a := range byService[name] {
			w := b.workload(svc, a.ID)
			w.Agent, w.Replicas = a, 1
			b.agentEnv(w)
			w.Context, w.Mounts = agentFiles(a, files)
			p.Workloads = append(p.Workloads, w)
		}
	}
	if slices.ContainsFunc(agents, func(a *Agent) bool { return a.Cllama }) {
		c, err := b.cllamaPlan()
		if err != nil {
			return nil, err
		}
		p.Cllama = c
	} else if b.opts.PublishCllama != "" || b.opts.PublishMetrics != "" {
		return nil, fmt.Errorf("%s: the pod has no cllama to publish (no agent has x-claw.cllama)", b.pod.File)
	}
	p.Secrets = b.secrets(p, providers, files)
	return p, nil
}

// workload is what a service's compose definition gives the workload
// named name: image, environment, replicas, health check.
func (b *builder) workload(svc *pod.Service, name string) *Workload {
	sc := svc.Compose
	w := &Workload{Name: name, Service: svc.Name, Image: sc.Image, Replicas: 1, HealthCheck: healthCheck(sc.HealthCheck)}
	if sc.Build != nil {
		w.Build = sc.Build.Context
		if filepath.IsAbs(w.Build) {
			if rel, err := filepath.Rel(b.pod.Dir, w.Build); err == nil {
				w.Build = "./" + filepath.ToSlash(rel)
				if rel == "." {
					w.Build = "."
				}
			}
		}
		if w.Image == "" {
			// The names Docker Compose gives the build.
			project := ProjectName(b.pod.Name)
			w.Image, w.ComposeV1Image = project+"-"+svc.Name, project+"_"+svc.Name
		}
	}
	switch {
	case sc.Deploy != nil && sc.Deploy.Replicas != nil:
		w.Replicas = *sc.Deploy.Replicas
	case sc.Scale != nil:
		w.Replicas = *sc.Scale
	}
	for _, k := range sortedKeys(sc.Environment) {
		v := sc.Environment[k]
		e := EnvVar{Name: k, Authored: true, Unset: v == nil}
		if v != nil {
			e.Value = *v
		}
		w.Env = append(w.Env, e)
	}
	return w
}

// setEnv sets a variable to claw's value, keeping it sorted by name; an
// authored variable keeps its mark.
func setEnv(env *[]EnvVar, name, value, secret string) {
	if e := Var(*env, name); e != nil {
		e.Value, e.Unset, e.Secret = value, false, secret
		return
	}
	i, _ := slices.BinarySearchFunc(*env, name, func(e EnvVar, n string) int { return strings.Compare(e.Name, n) })
	*env = slices.Insert(*env, i, EnvVar{Name: name, Value: value, Secret: secret})
}

// mcpStdioEnv gives a claw-mcp-stdio service the command it wraps, unless
// its environment names it already.
func mcpStdioEnv(w *Workload, m *pod.MCPStdio) {
	if Var(w.Env, "CLAW_MCP_STDIO_COMMAND") == nil {
		setEnv(&w.Env, "CLAW_MCP_STDIO_COMMAND", m.Command, "")
	}
	if Var(w.Env, "CLAW_MCP_STDIO_ARGS") == nil {
		args := m.Args
		if args == nil {
			args = []string{}
		}
		j, _ := json.Marshal(args)
		setEnv(&w.Env, "CLAW_MCP_STDIO_ARGS", string(j), "")
	}
}

// agentEnv adds what claw gives an agent: its id and pod and, when it uses
// cllama, the runner variables pointing its SDKs at cllama with its token
// and, with native tools, NativeEnv.
func (b *builder) agentEnv(w *Workload) {
	a := w.Agent
	setEnv(&w.Env, "CLAW_AGENT_ID", a.ID, "")
	setEnv(&w.Env, "CLAW_POD", b.pod.Name, "")
	if !a.Cllama {
		return
	}
	names := b.runnerEnvNames(b.pod.Services[a.Service])
	native := NativeEnv(a)
	for _, name := range sortedKeys(names) {
		if _, ok := native[name]; ok {
			continue
		}
		secret := ""
		if names[name] == pod.RunnerEnvToken {
			secret = TokenSecretID(a.ID)
		}
		setEnv(&w.Env, name, runnerEnvValue(names[name], a.Token), secret)
	}
	for _, name := range sortedKeys(native) {
		secret := ""
		if name == EnvMCPToken {
			secret = TokenSecretID(a.ID)
		}
		setEnv(&w.Env, name, native[name], secret)
	}
}

// agentFiles lists an agent's context files and what its container
// mounts. Its context directory itself is not mounted: it holds
// credentials only cllama may read.
func agentFiles(a *Agent, files []File) ([]ContextFile, []Mount) {
	dir := path.Join(ContextDir, a.ID)
	var ctx []ContextFile
	for _, f := range files {
		if strings.HasPrefix(f.Path, dir+"/") {
			ctx = append(ctx, ContextFile{Path: f.Path, Secret: f.Mode.Perm()&0o044 == 0})
		}
	}
	slices.SortFunc(ctx, func(x, y ContextFile) int { return strings.Compare(x.Path, y.Path) })
	var mounts []Mount
	if a.agentsMD != nil {
		mounts = append(mounts, Mount{Source: dir + "/AGENTS.md", Target: AgentClawDir + "/AGENTS.md", ReadOnly: true})
	}
	mounts = append(mounts, Mount{Source: dir + "/CLAWDAPUS.md", Target: AgentClawDir + "/CLAWDAPUS.md", ReadOnly: true})
	if len(a.Skills) > 0 {
		mounts = append(mounts, Mount{Source: dir + "/skills", Target: AgentSkillsDir, ReadOnly: true, Dir: true})
	}
	if NativeEnv(a) != nil {
		mounts = append(mounts, Mount{Source: MCPConfigPath(a.ID), Target: AgentMCPConfig, ReadOnly: true, Secret: true})
	}
	return ctx, mounts
}

// healthCheck is a compose health check in the plan's terms.
func healthCheck(hc *types.HealthCheckConfig) *HealthCheck {
	if hc == nil || hc.Disable {
		return nil
	}
	dur := func(d *types.Duration) *time.Duration {
		if d == nil {
			return nil
		}
		v := time.Duration(*d)
		return &v
	}
	out := &HealthCheck{Test: slices.Clone([]string(hc.Test)), Interval: dur(hc.Interval), Timeout: dur(hc.Timeout), StartPeriod: dur(hc.StartPeriod)}
	if hc.Retries != nil {
		r := *hc.Retries
		out.Retries = &r
	}
	return out
}

// cllama's health check: what compose runs, and what a target probing
// GET /health uses.
const (
	cllamaHealthPath        = "/health"
	cllamaHealthInterval    = 10 * time.Second
	cllamaHealthTimeout     = 3 * time.Second
	cllamaHealthStartPeriod = 5 * time.Second
	cllamaHealthRetries     = 3
)

// Where cllama finds what compile wrote, and writes its history.
const (
	cllamaContextMount = "/claw/context"
	cllamaAuthMount    = "/claw/auth"
	cllamaHistoryMount = "/claw/history"
)

// cllamaPlan is the governance proxy: it alone sees provider keys
// (.claw-auth) and every agent's compiled context, both read-only, and
// writes session history to HistoryDir.
func (b *builder) cllamaPlan() (*CllamaPlan, error) {
	cd := b.pod.Claw.CllamaDefaults
	c := &CllamaPlan{Image: b.opts.CllamaImage, Port: CllamaPort, Replicas: 1, StopGrace: b.cllamaStopGrace()}
	if c.Image == "" {
		c.Image = cd.Image
	}
	if c.Image == "" {
		c.Image = DefaultCllamaImage
	}
	if cd.Replicas > 0 {
		c.Replicas = cd.Replicas
	}
	for _, kv := range [][2]string{
		{"LISTEN_ADDR", fmt.Sprintf(":%d", CllamaPort)},
		{"CLAW_POD", b.pod.Name},
		{"CLAW_CONTEXT_ROOT", cllamaContextMount},
		{"CLAW_AUTH_DIR", cllamaAuthMount},
		{"CLAW_SESSION_HISTORY_DIR", cllamaHistoryMount},
	} {
		setEnv(&c.Env, kv[0], kv[1], "")
	}
	if d := cd.DefaultProvider; d != "" {
		setEnv(&c.Env, "CLLAMA_DEFAULT_PROVIDER", d, "")
	}
	// Provider keys reach cllama through ProvidersFile only, so they are
	// not in its environment; other settings (base URL overrides, proxy
	// knobs) are.
	keys := b.providerKeyVars()
	for _, k := range sortedKeys(cd.Env) {
		if _, secret := keys[k]; !secret {
			setEnv(&c.Env, k, cd.Env[k], "")
			Var(c.Env, k).Authored = true
		}
	}
	if pub := b.opts.PublishCllama; pub != "" {
		c.Publish = append(c.Publish, Published{Host: pub, Port: CllamaPort})
	}
	if pub := b.opts.PublishMetrics; pub != "" {
		port := MetricsPort
		if set := Var(c.Env, "CLLAMA_METRICS_ADDR"); set != nil && set.Value != "" {
			_, p, err := net.SplitHostPort(set.Value)
			n, perr := strconv.Atoi(p)
			if err != nil || perr != nil {
				return nil, fmt.Errorf("%s: x-claw.cllama-defaults.env.CLLAMA_METRICS_ADDR: %q is not [HOST]:PORT; fix it to publish metrics", b.pod.File, set.Value)
			}
			port = n
		} else {
			setEnv(&c.Env, "CLLAMA_METRICS_ADDR", fmt.Sprintf(":%d", MetricsPort), "")
		}
		c.Publish = append(c.Publish, Published{Host: pub, Port: port})
	}
	if err := b.cllamaAdmin(c); err != nil {
		return nil, err
	}
	digest, err := b.podSettingsDigest()
	if err != nil {
		return nil, err
	}
	setEnv(&c.Env, "CLAW_POD_SETTINGS", digest, "")
	interval, timeout, start, retries := cllamaHealthInterval, cllamaHealthTimeout, cllamaHealthStartPeriod, uint64(cllamaHealthRetries)
	c.Health = HealthCheck{HTTPPath: cllamaHealthPath, Interval: &interval, Timeout: &timeout, StartPeriod: &start, Retries: &retries}
	c.HealthSet = cd.HealthcheckOff || cd.Healthcheck != nil
	switch {
	case cd.HealthcheckOff:
	case cd.Healthcheck != nil:
		c.Health.Test = append([]string{}, cd.Healthcheck...)
	default:
		c.Health.Test = slices.Clone(DefaultCllamaHealthcheck)
	}
	c.Mounts = []Mount{
		{Source: ContextDir, Target: cllamaContextMount, ReadOnly: true, Dir: true},
		{Source: AuthDir, Target: cllamaAuthMount, ReadOnly: true, Dir: true},
		{Source: HistoryDir, Target: cllamaHistoryMount, Dir: true},
	}
	if c.Replicas > 1 {
		_, external := cd.Env["CLLAMA_STATE_URL"]
		c.State = &SharedState{External: external}
		if !external {
			c.State.Service, c.State.Image, c.State.Port = StateService, StateImage, StatePort
			c.State.URL = fmt.Sprintf("redis://%s:%d/0", StateService, StatePort)
		}
	}
	return c, nil
}

// cllamaAdmin turns cllama's admin listener on (at AdminPort, unless
// x-claw.cllama-defaults.env sets CLLAMA_ADMIN_ADDR) with the operator
// token from the auth directory, and publishes it on the host.
func (b *builder) cllamaAdmin(c *CllamaPlan) error {
	port := AdminPort
	if set := Var(c.Env, "CLLAMA_ADMIN_ADDR"); set != nil && set.Value != "" {
		_, p, err := net.SplitHostPort(set.Value)
		n, perr := strconv.Atoi(p)
		if err != nil || perr != nil {
			return fmt.Errorf("%s: x-claw.cllama-defaults.env.CLLAMA_ADMIN_ADDR: %q is not [HOST]:PORT; fix it, or remove it for the default :%d", b.pod.File, set.Value, AdminPort)
		}
		port = n
	} else {
		setEnv(&c.Env, "CLLAMA_ADMIN_ADDR", fmt.Sprintf(":%d", AdminPort), "")
	}
	if set := Var(c.Env, "CLLAMA_ADMIN_TOKEN"); set == nil || set.Value == "" {
		setEnv(&c.Env, "CLLAMA_ADMIN_TOKEN_FILE", cllamaAuthMount+"/"+path.Base(OperatorTokenFile), "")
	}
	pub := b.opts.PublishAdmin
	if pub == "" {
		pub = DefaultPublishAdmin
	}
	c.Publish = append(c.Publish, Published{Host: pub, Port: port})
	return nil
}

// cllamaDrain is cllama's default drain on SIGTERM (its
// CLLAMA_SHUTDOWN_TIMEOUT); stopMargin the time beyond it a target waits
// before killing the container.
const (
	cllamaDrain = 30 * time.Second
	stopMargin  = 5 * time.Second
)

// cllamaStopGrace is how long cllama is let stop: its drain, as
// x-claw.cllama-defaults.env's CLLAMA_SHUTDOWN_TIMEOUT sets it, plus a
// margin. Compose's own default (10s) would kill streams still in flight
// that cllama would let finish.
func (b *builder) cllamaStopGrace() time.Duration {
	d := cllamaDrain
	if v, err := time.ParseDuration(b.pod.Claw.CllamaDefaults.Env["CLLAMA_SHUTDOWN_TIMEOUT"]); err == nil && v > 0 {
		d = v
	}
	return d + stopMargin
}

// secrets lists the pod's credentials: every agent's token, the provider
// keys, and the service credentials agents' calls carry; variables holding
// one are marked with its ID.
func (b *builder) secrets(p *Plan, providers *manifest.Providers, files []File) []Secret {
	written := map[string]bool{}
	for _, f := range files {
		written[f.Path] = true
	}
	var out []Secret
	byID := map[string]int{}
	add := func(s Secret) *Secret {
		if i, ok := byID[s.ID]; ok {
			return &out[i]
		}
		byID[s.ID] = len(out)
		out = append(out, s)
		return &out[len(out)-1]
	}
	for _, w := range p.Workloads {
		a := w.Agent
		if a == nil {
			continue
		}
		dir := path.Join(ContextDir, a.ID)
		tok := Secret{ID: TokenSecretID(a.ID), Kind: SecretAgentToken, Agent: a.ID, Files: []string{path.Join(dir, "metadata.json")}}
		if written[MCPConfigPath(a.ID)] {
			tok.Files = append(tok.Files, MCPConfigPath(a.ID))
		}
		for _, e := range w.Env {
			if e.Secret == tok.ID {
				tok.Env = append(tok.Env, EnvRef{Workload: w.Name, Name: e.Name})
			}
		}
		add(tok)
		for _, target := range sortedKeys(a.serviceAuthFrom) {
			from := a.serviceAuthFrom[target]
			s := add(Secret{ID: from, Kind: SecretServiceCredential, From: from, Service: target})
			s.Agents = append(s.Agents, a.ID)
			s.Files = append(s.Files, path.Join(dir, "service-auth", target+".json"))
			if slices.ContainsFunc(a.tools, func(t manifest.Tool) bool { return t.Execution.Service == target && t.Execution.Auth != nil }) {
				s.Files = append(s.Files, path.Join(dir, "tools.json"))
			}
			if slices.ContainsFunc(a.Feeds, func(f manifest.Feed) bool { return f.Source == target && f.Auth != "" }) {
				s.Files = append(s.Files, path.Join(dir, "feeds.json"))
			}
		}
	}
	if providers != nil {
		for _, name := range sortedKeys(providers.Providers) {
			if providers.Providers[name].APIKey == "" {
				continue
			}
			from := "x-claw.cllama-defaults.env." + strings.ToUpper(name) + "_API_KEY"
			add(Secret{ID: from, Kind: SecretProviderKey, From: from, Provider: name, Files: []string{ProvidersFile}})
		}
	}
	// A credential from a service's environment: that variable holds it.
	for i := range out {
		s := &out[i]
		name, ok := strings.CutPrefix(s.From, "services."+s.Service+".environment.")
		if s.Kind != SecretServiceCredential || !ok {
			continue
		}
		if w := p.Workload(s.Service); w != nil {
			if e := Var(w.Env, name); e != nil {
				e.Secret = s.ID
				s.Env = append(s.Env, EnvRef{Workload: w.Name, Name: name})
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Agents)
		out[i].Files = slices.Compact(slices.Sorted(slices.Values(out[i].Files)))
	}
	slices.SortFunc(out, func(x, y Secret) int { return strings.Compare(x.ID, y.ID) })
	return out
}

var projectUnsafe = regexp.MustCompile(`[^a-z0-9_-]+`)

// ProjectName turns a pod name into the compose project name claw runs
// the pod as (lower case letters, digits, '_' and '-', starting with a
// letter or digit).
func ProjectName(pod string) string {
	s := strings.Trim(projectUnsafe.ReplaceAllString(strings.ToLower(pod), "-"), "-_")
	if s == "" {
		return "claw"
	}
	return s
}
