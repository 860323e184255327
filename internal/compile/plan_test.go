package compile

import (
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// examplePod is the pod `make demo` runs.
const examplePod = "../../examples/trading-desk"

// buildExample compiles the example pod with fresh tokens, writing nothing.
func buildExample(t *testing.T) *Result {
	t.Helper()
	return build(t, examplePod, Options{KeepTokens: map[string]string{}})
}

// TestPlanOfTheExample states what the trading desk's plan says, as a user
// of the pod relies on it: the workloads and their images, every agent's
// token as a secret reference held in the agent's own variables and files,
// provider keys only in providers.json, the trading-api bearer projected
// from the service's own environment, and cllama.
func TestPlanOfTheExample(t *testing.T) {
	res := buildExample(t)
	plan := res.Plan
	if plan == nil || plan.Perimeter != res.Perimeter || plan.Pod != "trading-desk" {
		t.Fatalf("plan %+v", plan)
	}
	images := map[string]string{}
	for _, w := range plan.Workloads {
		images[w.Name] = w.Image
	}
	want := map[string]string{
		"analyst": "clawgo/example-openai-runner:latest", "researcher": "clawgo/example-openai-runner:latest",
		"executor": "clawgo/example-anthropic-runner:latest", "scout": "clawgo/example-mcp-runner:latest",
		"intern":      "clawgo/example-openai-runner:latest",
		"trading-api": "clawgo/example-trading-api:latest", "market-data": "clawgo/claw-mcp-stdio:latest",
		"claw-model": "clawgo/claw-model:latest",
	}
	if len(images) != len(want) {
		t.Errorf("workloads %v, want %v", images, want)
	}
	for n, im := range want {
		if images[n] != im {
			t.Errorf("%s runs %q, want %q", n, images[n], im)
		}
	}

	// Every agent's token: a secret reference, carried by its own runner
	// variables (and, for the agent with native tools, CLAW_MCP_TOKEN and
	// mcp.json) and by no other variable of the pod.
	for _, a := range res.Agents {
		s := plan.Secret(TokenSecretID(a.ID))
		if s == nil || s.Kind != SecretAgentToken || s.Agent != a.ID || s.From != "" {
			t.Fatalf("%s: token secret %+v", a.ID, s)
		}
		files := []string{path.Join(ContextDir, a.ID, "metadata.json")}
		if a.HasNative() {
			files = append(files, MCPConfigPath(a.ID))
		}
		if !slices.Equal(s.Files, files) {
			t.Errorf("%s: token in %v, want %v", a.ID, s.Files, files)
		}
		var carried []EnvRef
		for _, w := range plan.Workloads {
			for _, e := range w.Env {
				if strings.Contains(e.Value, a.Token) {
					if e.Secret != s.ID || w.Name != a.ID || e.Value != a.Token {
						t.Errorf("%s.%s holds %s's token but is marked %q", w.Name, e.Name, a.ID, e.Secret)
					}
					carried = append(carried, EnvRef{Workload: w.Name, Name: e.Name})
				}
			}
		}
		for _, e := range plan.Cllama.Env {
			if strings.Contains(e.Value, a.Token) {
				t.Errorf("cllama's %s holds %s's token", e.Name, a.ID)
			}
		}
		if len(carried) == 0 || !slices.Equal(carried, s.Env) {
			t.Errorf("%s: token carried by %v, the secret says %v", a.ID, carried, s.Env)
		}
		for _, name := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"} {
			if !slices.Contains(s.Env, EnvRef{Workload: a.ID, Name: name}) {
				t.Errorf("%s: %s does not carry the token", a.ID, name)
			}
		}
		if got := slices.Contains(s.Env, EnvRef{Workload: a.ID, Name: EnvMCPToken}); got != a.HasNative() {
			t.Errorf("%s: %s carries the token: %v, native tools: %v", a.ID, EnvMCPToken, got, a.HasNative())
		}
	}

	// Provider keys: in providers.json, from cllama-defaults.env, in no
	// environment (cllama's included).
	const simKey = "sim-key-not-secret" // examples/trading-desk/.env
	for _, p := range []string{"anthropic", "openai"} {
		id := "x-claw.cllama-defaults.env." + strings.ToUpper(p) + "_API_KEY"
		s := plan.Secret(id)
		if s == nil || s.Kind != SecretProviderKey || s.Provider != p || !slices.Equal(s.Files, []string{ProvidersFile}) || len(s.Env) > 0 {
			t.Errorf("provider %s: %+v", p, s)
		}
	}
	for _, w := range append(slices.Clone(plan.Workloads), &Workload{Name: CllamaService, Env: plan.Cllama.Env}) {
		for _, e := range w.Env {
			if strings.Contains(e.Value, simKey) || strings.HasSuffix(e.Name, "_API_KEY") && !e.Unset && e.Secret == "" {
				t.Errorf("%s.%s = %q holds a provider key", w.Name, e.Name, e.Value)
			}
		}
	}

	// The trading-api bearer: from the service's own environment, in the
	// context of every agent granted its tools or feeds, never an agent's
	// variable.
	cred := plan.Secret(envKey("trading-api", "TRADING_API_TOKEN"))
	if cred == nil || cred.Kind != SecretServiceCredential || cred.Service != "trading-api" ||
		!slices.Equal(cred.Agents, []string{"analyst", "executor", "intern", "researcher", "scout"}) ||
		!slices.Equal(cred.Env, []EnvRef{{Workload: "trading-api", Name: "TRADING_API_TOKEN"}}) {
		t.Fatalf("trading-api credential %+v", cred)
	}
	for _, id := range cred.Agents {
		for _, f := range []string{"service-auth/trading-api.json", "tools.json", "feeds.json"} {
			if !slices.Contains(cred.Files, path.Join(ContextDir, id, f)) {
				t.Errorf("credential not listed in %s's %s: %v", id, f, cred.Files)
			}
		}
	}
	if e := Var(plan.Workload("trading-api").Env, "TRADING_API_TOKEN"); e == nil || !e.Authored || e.Secret != cred.ID {
		t.Errorf("trading-api's TRADING_API_TOKEN: %+v", e)
	}
	if n := len(plan.Secrets); n != len(res.Agents)+3 {
		t.Errorf("%d secrets: %+v", n, plan.Secrets)
	}

	// What each agent's container gets of its context: its contract, pod
	// view and skills; the files holding credentials are cllama's only.
	for _, w := range plan.Workloads {
		if w.Agent == nil {
			if len(w.Context) > 0 || len(w.Mounts) > 0 {
				t.Errorf("service %s has agent files", w.Name)
			}
			continue
		}
		for _, f := range w.Context {
			base := path.Base(f.Path)
			secret := base == "metadata.json" || base == "tools.json" || base == "feeds.json" || strings.Contains(f.Path, "/service-auth/")
			if f.Secret != secret {
				t.Errorf("%s: secret %v, want %v", f.Path, f.Secret, secret)
			}
		}
		var targets []string
		for _, m := range w.Mounts {
			targets = append(targets, m.Target)
			if !m.ReadOnly || m.Secret != (m.Target == AgentMCPConfig) {
				t.Errorf("%s: mount %+v", w.Name, m)
			}
			if i := slices.IndexFunc(w.Context, func(f ContextFile) bool { return f.Path == m.Source }); i >= 0 && w.Context[i].Secret {
				t.Errorf("%s mounts %s, which only cllama may read", w.Name, m.Source)
			}
		}
		want := []string{"/claw/AGENTS.md", "/claw/CLAWDAPUS.md", "/claw/skills"}
		if w.Agent.HasNative() {
			want = append(want, AgentMCPConfig)
		}
		if !slices.Equal(targets, want) {
			t.Errorf("%s mounts %v, want %v", w.Name, targets, want)
		}
	}

	c := plan.Cllama
	if c == nil || c.Image != DefaultCllamaImage || c.Port != CllamaPort || c.Replicas != 1 || c.State != nil ||
		c.Health.HTTPPath != "/health" || !slices.Equal(c.Health.Test, DefaultCllamaHealthcheck) || c.HealthSet {
		t.Fatalf("cllama %+v", c)
	}
	if e := Var(c.Env, "CLLAMA_METRICS_ADDR"); e == nil || !e.Authored || e.Value != ":9090" {
		t.Errorf("cllama's CLLAMA_METRICS_ADDR: %+v", e)
	}
	if e := Var(c.Env, "CLAW_CONTEXT_ROOT"); e == nil || e.Authored || e.Value != c.Mounts[0].Target || c.Mounts[0].Source != ContextDir {
		t.Errorf("cllama's context: %+v, mounts %+v", e, c.Mounts)
	}
}

// TestComposeRendersThePlan: every service of compose.generated.yml has
// exactly the plan's environment and image, and cllama is there with the
// plan's.
func TestComposeRendersThePlan(t *testing.T) {
	for name, dir := range map[string]string{
		"example":               examplePod,
		"native-tools":          "testdata/native-tools/pod",
		"count-and-plain-agent": "testdata/count-and-plain-agent/pod",
		"perimeter":             "testdata/perimeter/pod",
	} {
		t.Run(name, func(t *testing.T) {
			res := build(t, dir, Options{KeepTokens: map[string]string{}})
			f, ok := fileOf(t, res, GeneratedFile)
			if !ok || f.Mode != modeSecret {
				t.Fatalf("%s: %+v", GeneratedFile, f)
			}
			var gen struct {
				Services map[string]struct {
					Image       string             `yaml:"image"`
					Environment map[string]*string `yaml:"environment"`
				} `yaml:"services"`
			}
			if err := yaml.Unmarshal(f.Data, &gen); err != nil {
				t.Fatal(err)
			}
			check := func(name, image string, env []EnvVar) {
				s, ok := gen.Services[name]
				if !ok {
					t.Errorf("no service %s", name)
					return
				}
				if image != "" && s.Image != image {
					t.Errorf("%s: image %q, the plan says %q", name, s.Image, image)
				}
				if len(s.Environment) != len(env) {
					t.Errorf("%s: %d variables, the plan has %d", name, len(s.Environment), len(env))
				}
				for _, e := range env {
					v, ok := s.Environment[e.Name]
					switch {
					case !ok:
						t.Errorf("%s: no %s", name, e.Name)
					case e.Unset != (v == nil):
						t.Errorf("%s: %s unset %v, the plan says %v", name, e.Name, v == nil, e.Unset)
					case v != nil && strings.ReplaceAll(*v, "$$", "$") != e.Value:
						t.Errorf("%s: %s = %q, the plan says %q", name, e.Name, *v, e.Value)
					}
				}
			}
			for _, w := range res.Plan.Workloads {
				image := w.Image
				if w.Build != "" && res.Pod.Services[w.Service].Compose.Image == "" {
					image = "" // compose names the build itself
				}
				check(w.Name, image, w.Env)
			}
			if c := res.Plan.Cllama; c != nil {
				check(CllamaService, c.Image, c.Env)
			}
			if n := len(res.Plan.Workloads); res.Plan.Cllama != nil && len(gen.Services) != n+1 || res.Plan.Cllama == nil && len(gen.Services) != n {
				t.Errorf("%d services, the plan has %d workloads", len(gen.Services), n)
			}
		})
	}
}

// TestBuiltImageNames: a service that builds its image without naming one
// runs the name Docker Compose gives the build, of the compose project
// claw runs the pod as (the pod name made a project name): Compose v2's
// <project>-<service>, and docker-compose 1.x's <project>_<service> beside.
func TestBuiltImageNames(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "claw-pod.yml"), []byte("x-claw:\n  pod: Trading Desk\nservices:\n  api:\n    build: ./api\n  named:\n    build: ./api\n    image: acme/named:1\n"))
	mustWrite(t, filepath.Join(dir, "api", "Dockerfile"), []byte("FROM scratch\n"))
	res := build(t, dir, Options{})
	got := map[string][2]string{}
	for _, w := range res.Plan.Workloads {
		got[w.Name] = [2]string{w.Image, w.ComposeV1Image}
	}
	want := map[string][2]string{"api": {"trading-desk-api", "trading-desk_api"}, "named": {"acme/named:1", ""}}
	if !maps.Equal(got, want) {
		t.Errorf("images %v, want %v", got, want)
	}
	if ProjectName("Trading Desk") != "trading-desk" {
		t.Errorf("project %q", ProjectName("Trading Desk"))
	}
}
