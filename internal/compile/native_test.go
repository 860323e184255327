package compile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// editPod replaces old with repl in the pod file of dir.
func editPod(t *testing.T, dir, old, repl string) {
	t.Helper()
	file := filepath.Join(dir, "claw-pod.yml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), old, repl, 1)
	if edited == string(data) {
		t.Fatalf("the native-tools pod changed; update the edit of %q", old)
	}
	mustWrite(t, file, []byte(edited))
}

func fileOf(t *testing.T, res *Result, p string) (File, bool) {
	t.Helper()
	for _, f := range res.Output.Files {
		if f.Path == p {
			return f, true
		}
	}
	return File{}, false
}

// An agent with a native tool gets an MCP client configuration naming the
// pod's server, cllama's /mcp and its own token, as a secret outside its
// context directory; agents without native tools get none. tools.json
// records every tool's mode.
func TestNativeToolsRunnerConfig(t *testing.T) {
	dir := copyCase(t, "native-tools")
	res := build(t, dir, Options{})
	tokens := map[string]string{}
	for _, a := range res.Agents {
		tokens[a.ID] = a.Token
	}
	for _, id := range []string{"coder", "crew-0", "crew-1"} {
		f, ok := fileOf(t, res, ".claw-runtime/runner/"+id+"/mcp.json")
		if !ok {
			t.Fatalf("%s: no mcp.json", id)
		}
		if f.Mode != 0o600 {
			t.Errorf("%s: mcp.json mode %o, want 600", id, f.Mode)
		}
		var c MCPConfig
		if err := json.Unmarshal(f.Data, &c); err != nil {
			t.Fatal(err)
		}
		srv, ok := c.MCPServers["mixed"]
		if len(c.MCPServers) != 1 || !ok || srv.Type != "http" || srv.URL != "http://cllama:8080/mcp" || srv.Headers["Authorization"] != "Bearer "+tokens[id] {
			t.Errorf("%s: mcp.json %s", id, f.Data)
		}
	}
	for _, f := range res.Output.Files {
		if strings.HasPrefix(f.Path, ContextDir+"/") && strings.HasSuffix(f.Path, "/mcp.json") {
			t.Errorf("%s: the runner's file is in the context directory", f.Path)
		}
		for _, id := range []string{"chatter", "plain"} {
			if strings.HasPrefix(f.Path, RunnerDir+"/"+id+"/") {
				t.Errorf("%s: an agent without native tools got %s", id, f.Path)
			}
		}
	}
	f, _ := fileOf(t, res, ContextDir+"/coder/tools.json")
	tm, err := manifest.ParseTools(f.Data)
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]string{}
	for _, tool := range tm.Tools {
		modes[tool.Name] = tool.Mode
	}
	want := map[string]string{"notes.list_notes": "native", "notes.add_note": "native", "search.search": "mediated"}
	if len(modes) != len(want) {
		t.Fatalf("coder's tools %v", modes)
	}
	for name, m := range want {
		if modes[name] != m {
			t.Errorf("%s: mode %q, want %q", name, modes[name], m)
		}
	}
}

// In the compose file an agent with native tools mounts its own file
// read-only at /claw/mcp.json and gets CLAW_MCP_URL and CLAW_MCP_TOKEN;
// no agent mounts another's, and agents without native tools get none.
func TestNativeToolsComposeWiring(t *testing.T) {
	res := build(t, copyCase(t, "native-tools"), Options{})
	gen, _ := fileOf(t, res, GeneratedFile)
	services := generatedServices(t, gen.Data)
	for _, a := range res.Agents {
		s := services[a.ID]
		var mcpMounts []string
		for _, v := range s.Volumes {
			if strings.Contains(v, "mcp.json") || strings.Contains(v, RunnerDir) {
				mcpMounts = append(mcpMounts, v)
			}
		}
		native := a.ID == "coder" || strings.HasPrefix(a.ID, "crew-")
		if !native {
			if len(mcpMounts) > 0 || s.Environment[EnvMCPURL] != "" || s.Environment[EnvMCPToken] != "" {
				t.Errorf("%s has no native tools but got %v %v", a.ID, mcpMounts, s.Environment)
			}
			continue
		}
		if want := []string{"./.claw-runtime/runner/" + a.ID + "/mcp.json:/claw/mcp.json:ro"}; !slices.Equal(mcpMounts, want) {
			t.Errorf("%s mounts %v, want %v", a.ID, mcpMounts, want)
		}
		if s.Environment[EnvMCPURL] != "http://cllama:8080/mcp" || s.Environment[EnvMCPToken] != a.Token {
			t.Errorf("%s: environment %v", a.ID, s.Environment)
		}
	}
}

type genSvc struct {
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
}

// generatedServices reads the services of a generated compose file, as
// far as agents' environment and short-form mounts go.
func generatedServices(t *testing.T, data []byte) map[string]genSvc {
	t.Helper()
	var doc struct {
		Services map[string]genSvc `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Services
}

// Write keeps the runner's file and its directory to the operator, and
// drops it when the agent loses its native tools.
func TestNativeToolsWriteModesAndPrune(t *testing.T) {
	dir := copyCase(t, "native-tools")
	if err := build(t, dir, Options{}).Output.Write(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, filepath.FromSlash(RunnerDir), "coder", "mcp.json")
	for p, want := range map[string]os.FileMode{file: 0o600, filepath.Dir(file): 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", p, st.Mode().Perm(), want)
		}
	}
	editPod(t, dir, "  tools-mode: native\n", "")
	editPod(t, dir, "          allow: [add_note]       # native (tools-mode)\n", "          allow: [add_note]\n          mode: mediated\n")
	res := build(t, dir, Options{})
	if err := res.Output.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(RunnerDir), "coder")); !os.IsNotExist(err) {
		t.Errorf("the runner directory of an agent without native tools is kept: %v", err)
	}
	gen, _ := fileOf(t, res, GeneratedFile)
	if strings.Contains(string(gen.Data), "mcp") {
		t.Errorf("a pod without native tools mentions MCP:\n%s", gen.Data)
	}
}

// Compile stages the runner's file and Apply makes it live: added with the
// agent, changed and removed with its native tools, and reported pending
// like the agent's context.
func TestNativeToolsStageAndApply(t *testing.T) {
	dir := copyCase(t, "native-tools")
	live := filepath.Join(dir, filepath.FromSlash(RunnerDir), "coder", "mcp.json")
	staged := filepath.Join(dir, filepath.FromSlash(StagedRunnerDir), "coder", "mcp.json")
	st, err := Stage(dir, build(t, dir, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Applied {
		t.Fatal("the first compile was not applied")
	}
	for _, p := range []string{live, staged} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, st, err)
		}
	}
	first, _ := os.ReadFile(live)

	// The pod renamed: every native agent's file changes, staged only.
	editPod(t, dir, "  pod: mixed\n", "  pod: renamed\n")
	st, err = Stage(dir, build(t, dir, Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Applied || !slices.Contains(st.Pending, "coder") {
		t.Fatalf("staged %+v", st)
	}
	if now, _ := os.ReadFile(live); string(now) != string(first) {
		t.Fatal("compiling changed the live runner file")
	}
	if _, err := Apply(dir); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(live); !strings.Contains(string(now), `"renamed"`) {
		t.Fatalf("apply left the runner file as it was:\n%s", now)
	}

	// coder's tools all mediated: its file goes on apply.
	editPod(t, dir, "  tools-mode: native\n", "")
	editPod(t, dir, "          allow: [add_note]       # native (tools-mode)\n", "          allow: [add_note]\n          mode: mediated\n")
	if _, err := Stage(dir, build(t, dir, Options{})); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staged); !os.IsNotExist(err) {
		t.Errorf("the staged runner file is kept: %v", err)
	}
	applied, err := Apply(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(applied.Changed, "coder") {
		t.Errorf("applied %+v", applied)
	}
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("the live runner file of an agent without native tools is kept: %v", err)
	}
	if p, err := Pending(dir); err != nil || len(p) != 0 {
		t.Fatalf("pending after apply: %v %v", p, err)
	}

	// A live runner file changed by hand is pending, and restored.
	editPod(t, dir, "          mode: mediated\n", "          mode: native\n")
	if _, err := Stage(dir, build(t, dir, Options{})); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(dir); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(live)
	if err := os.WriteFile(live, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := Pending(dir); err != nil || !slices.Equal(p, []string{"coder"}) {
		t.Fatalf("pending: %v %v", p, err)
	}
	if _, err := Apply(dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(live); string(got) != string(want) {
		t.Fatalf("not restored: %s", got)
	}
}

// The native-tool variables are claw's for an agent with native tools:
// runner-env cannot name them, and the agent's environment cannot set them
// to something else; an agent without native tools is free to.
func TestNativeEnvConflicts(t *testing.T) {
	for _, tc := range []struct {
		name, old, repl, key string
		service              string
	}{
		{"environment token", "  coder:\n    image: runner\n", "  coder:\n    image: runner\n    environment: {CLAW_MCP_TOKEN: mine}\n", "environment.CLAW_MCP_TOKEN", "coder"},
		{"service runner-env", "      agent: AGENTS.md\n", "      agent: AGENTS.md\n      runner-env: {CLAW_MCP_URL: openai-base-url}\n", "x-claw.runner-env.CLAW_MCP_URL", "coder"},
		{"pod runner-env", "  tools-mode: native\n", "  tools-mode: native\n  runner-env: {CLAW_MCP_TOKEN: token}\n", "x-claw.runner-env.CLAW_MCP_TOKEN", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyCase(t, "native-tools")
			editPod(t, dir, tc.old, tc.repl)
			_, err := Build(t.Context(), loadPod(t, dir), Options{})
			var pe *pod.Error
			if !errors.As(err, &pe) || pe.Key != tc.key || pe.Service != tc.service || pe.Fix == "" {
				t.Fatalf("got %v", err)
			}
			if strings.Contains(err.Error(), "mine") {
				t.Errorf("the error quotes the token value: %v", err)
			}
		})
	}
	dir := copyCase(t, "native-tools")
	editPod(t, dir, "  chatter:\n    image: runner\n", "  chatter:\n    image: runner\n    environment: {CLAW_MCP_URL: http://elsewhere/mcp}\n")
	res := build(t, dir, Options{})
	gen, _ := fileOf(t, res, GeneratedFile)
	if s := generatedServices(t, gen.Data)["chatter"]; s.Environment[EnvMCPURL] != "http://elsewhere/mcp" {
		t.Errorf("an agent without native tools lost its own variable: %v", s.Environment)
	}
}
