package compile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// copyCase copies testdata/<name>/pod into a temporary directory.
func copyCase(t *testing.T, name string) string {
	t.Helper()
	tmp := t.TempDir()
	for p, data := range readTree(t, filepath.Join("testdata", name, "pod"), nil) {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

func loadPod(t *testing.T, dir string) *pod.Pod {
	t.Helper()
	p, err := pod.Load(context.Background(), pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml")})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func build(t *testing.T, dir string, opts Options) *Result {
	t.Helper()
	res, err := Build(context.Background(), loadPod(t, dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRecompileIsByteIdentical: real tokens from crypto/rand, kept across
// recompiles; every other byte identical.
func TestRecompileIsByteIdentical(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	first := build(t, dir, Options{})
	if err := first.Output.Write(dir); err != nil {
		t.Fatal(err)
	}
	second := build(t, dir, Options{})
	if len(first.Output.Files) != len(second.Output.Files) {
		t.Fatalf("file count changed: %d then %d", len(first.Output.Files), len(second.Output.Files))
	}
	for i, f := range first.Output.Files {
		g := second.Output.Files[i]
		if f.Path != g.Path || !bytes.Equal(f.Data, g.Data) || f.Mode != g.Mode {
			t.Errorf("%s changed on recompile", f.Path)
		}
	}
	for _, a := range first.Agents {
		if !strings.HasPrefix(a.Token, a.ID+":") || len(a.Token) != len(a.ID)+1+48 {
			t.Errorf("token %q is not <agent-id>:<48 hex>", a.Token)
		}
	}
	if first.Agents[0].Token == first.Agents[1].Token {
		t.Error("two agents share a token")
	}
	// A fresh pod directory gets fresh tokens.
	other := build(t, copyCase(t, "trading-desk"), Options{})
	if other.Agents[0].Token == first.Agents[0].Token {
		t.Error("tokens are not fresh for a new pod")
	}
}

// TestOutputsRoundTripThroughManifest: cllama reads what claw writes.
func TestOutputsRoundTripThroughManifest(t *testing.T) {
	for _, name := range []string{"trading-desk", "grants-normalise", "feeds-forms", "count-and-plain-agent", "mcp-and-projection", "native-tools"} {
		t.Run(name, func(t *testing.T) {
			res := build(t, copyCase(t, name), Options{})
			seen := 0
			for _, f := range res.Output.Files {
				base := path.Base(f.Path)
				agent := path.Base(path.Dir(f.Path))
				var err error
				switch {
				case base == "metadata.json":
					_, err = manifest.ParseMetadata(f.Data, agent)
				case base == "tools.json":
					_, err = manifest.ParseTools(f.Data)
				case base == "feeds.json":
					_, err = manifest.ParseFeeds(f.Data)
				case base == "providers.json":
					_, err = manifest.ParseProviders(f.Data)
				case path.Base(path.Dir(f.Path)) == "service-auth":
					_, err = manifest.ParseServiceAuth(f.Data, strings.TrimSuffix(base, ".json"))
				default:
					continue
				}
				seen++
				if err != nil {
					t.Errorf("%s: %v", f.Path, err)
				}
			}
			if seen == 0 {
				t.Fatal("no manifest files")
			}
		})
	}
}

func TestWriteModesAndPrune(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	res := build(t, dir, Options{})
	stale := filepath.Join(dir, ContextDir, "removed-agent", "tools.json")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := res.Output.Write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(stale)); !os.IsNotExist(err) {
		t.Errorf("stale agent directory kept: %v", err)
	}
	for rel, want := range map[string]os.FileMode{
		"service-auth/trading-api.json": 0o600,
		"tools.json":                    0o600,
		"metadata.json":                 0o600,
		"CLAWDAPUS.md":                  0o644,
	} {
		st, err := os.Stat(filepath.Join(dir, ContextDir, "analyst", filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", rel, st.Mode().Perm(), want)
		}
	}
}

// TestDenyByDefault: a descriptor's tools reach no agent without tools:.
func TestDenyByDefault(t *testing.T) {
	res := build(t, copyCase(t, "feeds-forms"), Options{})
	for _, a := range res.Agents {
		if len(a.Tools) != 0 {
			t.Errorf("%s got tools without a grant: %v", a.ID, a.Tools)
		}
		for _, f := range res.Output.Files {
			if strings.HasSuffix(f.Path, a.ID+"/tools.json") {
				t.Errorf("%s: tools.json written without grants", a.ID)
			}
		}
	}
}

// TestGeneratedComposeLoadsInDockerCompose checks every golden
// compose.generated.yml with docker-compose 1.x and docker compose v2,
// whichever are installed.
func TestGeneratedComposeLoadsInDockerCompose(t *testing.T) {
	var tools [][]string
	if _, err := exec.LookPath("docker-compose"); err == nil {
		tools = append(tools, []string{"docker-compose"})
	}
	if _, err := exec.LookPath("docker"); err == nil && exec.Command("docker", "compose", "version").Run() == nil {
		tools = append(tools, []string{"docker", "compose"})
	}
	if len(tools) == 0 {
		t.Skip("neither docker-compose nor docker compose is installed")
	}
	cases, _ := filepath.Glob(filepath.Join("testdata", "*", "want", GeneratedFile))
	for _, gen := range cases {
		name := filepath.Base(filepath.Dir(filepath.Dir(gen)))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkWithCompose(t, name, tools)
		})
	}
}

func checkWithCompose(t *testing.T, name string, tools [][]string) {
	if w, _ := os.ReadFile(filepath.Join("testdata", name, "want", "warnings.txt")); strings.Contains(string(w), "neither image nor build") {
		t.Skip("the pod is compile-only: a service has no image")
	}
	{
		dir := copyCase(t, name)
		for p, data := range readTree(t, filepath.Join("testdata", name, "want"), nil) {
			full := filepath.Join(dir, filepath.FromSlash(p))
			_ = os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, tool := range tools {
			args := append(append([]string{}, tool[1:]...), "-p", "claw-test", "-f", GeneratedFile, "config", "-q")
			cmd := exec.Command(tool[0], args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: %s rejects %s: %v\n%s", name, strings.Join(tool, " "), GeneratedFile, err, out)
			}
		}
	}
}

// TestSkillSymlinkCannotLeaveDescriptorDir: a descriptor's skill is read
// from inside the descriptor's directory only; a symlink pointing outside
// it (for example at an operator's credentials) must not be copied into a
// file mounted into agents.
func TestSkillSymlinkCannotLeaveDescriptorDir(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	secret := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(secret, []byte("aws_secret_access_key=SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	skill := filepath.Join(dir, "trading-api", "skills", "trading-policy.md")
	if err := os.Remove(skill); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, skill); err != nil {
		t.Fatal(err)
	}
	res, err := Build(context.Background(), loadPod(t, dir), Options{})
	if err == nil {
		for _, f := range res.Output.Files {
			if bytes.Contains(f.Data, []byte("SECRET")) {
				t.Fatalf("%s holds the content of a file outside the descriptor's directory", f.Path)
			}
		}
		t.Fatal("compile accepted a skill symlink that leaves the descriptor's directory")
	}
	if !strings.Contains(err.Error(), "skill") {
		t.Errorf("error does not name the skill key: %v", err)
	}
	// A symlink that stays inside the directory is fine.
	inside := filepath.Join(dir, "trading-api", "skills", "real.md")
	if err := os.WriteFile(inside, []byte("# policy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(skill); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.md", skill); err != nil {
		t.Fatal(err)
	}
	build(t, dir, Options{})
}

// TestDescriptorFeedWithoutTTLGetsDefault: a descriptor feed that gives no
// ttl is cached for the default, like an explicit feed without ttl, rather
// than refetched on every request (ttl 0).
func TestDescriptorFeedWithoutTTLGetsDefault(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "api", ".claw-describe.json"), []byte(`{"version":1,"feeds":[{"name":"news","path":"/news"}]}`))
	mustWrite(t, filepath.Join(dir, "claw-pod.yml"), []byte(`services:
  a:
    image: runner
    x-claw:
      cllama: passthrough
      feeds: [news, {source: api, path: /news, name: news2}]
  api:
    build: ./api
    expose: ["80"]
`))
	res := build(t, dir, Options{Rand: zeroReader{}})
	for _, f := range res.Agents[0].Feeds {
		if f.TTL != defaultFeedTTL {
			t.Errorf("feed %s: ttl %d, want the default %d", f.Name, f.TTL, defaultFeedTTL)
		}
	}
}

// TestWriteTightensSecretDirs: the directories holding credentials are
// 0700 even when they already existed with a wider mode.
func TestWriteTightensSecretDirs(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	for _, d := range []string{AuthDir, ContextDir + "/executor/service-auth"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := build(t, dir, Options{}).Output.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{AuthDir, ContextDir + "/executor/service-auth"} {
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(d)))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %o, want 700", d, st.Mode().Perm())
		}
	}
}

// A value shaped like a well-known provider's key in an agent's
// environment is a warning naming the variable, whatever its name; a
// value that is no such key is not.
func TestProviderKeyShapesInAgentEnvironment(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	file := filepath.Join(dir, "claw-pod.yml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	env := "    environment:\n      NOTES_BACKUP: sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123\n      GREETING: hello\n"
	data = []byte(strings.Replace(string(data), "    image: analyst:latest\n", "    image: analyst:latest\n"+env, 1))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res := build(t, dir, Options{})
	var hits []string
	for _, w := range res.Warnings {
		if strings.Contains(w, "looks like") {
			hits = append(hits, w)
		}
	}
	if len(hits) != 1 || !strings.Contains(hits[0], `service "analyst": environment.NOTES_BACKUP looks like an Anthropic key`) {
		t.Fatalf("warnings %q", res.Warnings)
	}
	for v, want := range map[string]string{"sk-proj-" + strings.Repeat("a", 30): "an OpenAI", "gsk_" + strings.Repeat("b", 30): "a Groq", "Bearer sk-or-v1-" + strings.Repeat("c", 30): "an OpenRouter", "sk-short": "", "task-ant-" + strings.Repeat("d", 30): ""} {
		if got := keyShape(v); got != want {
			t.Errorf("keyShape(%q) = %q, want %q", v, got, want)
		}
	}
}

// A tool the service does not declare, granted after `- ...`, is reported
// at the entry where it was written, not at the first entry of the merged
// grant (the pod's default).
func TestGrantErrorPointsWhereTheNameWasWritten(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	file := filepath.Join(dir, "claw-pod.yml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	grant := "      tools:\n        - ...\n        - service: trading-api\n          allow: [drop_everything]\n"
	data = []byte(strings.Replace(string(data), "      agent: agents/analyst\n", "      agent: agents/analyst\n"+grant, 1))
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), loadPod(t, dir), Options{})
	var pe *pod.Error
	if !errors.As(err, &pe) || pe.Key != "x-claw.tools[1].allow" || !strings.Contains(pe.Problem, `"drop_everything"`) {
		t.Fatalf("error %v (key %q)", err, func() string {
			if pe != nil {
				return pe.Key
			}
			return ""
		}())
	}
}

// Problems of different services are reported in one run, sorted by
// service, so an operator fixes them in one pass.
func TestEveryServicesProblemInOneRun(t *testing.T) {
	dir := copyCase(t, "trading-desk")
	file := filepath.Join(dir, "claw-pod.yml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "      agent: agents/analyst\n", "      agent: agents/analyst\n      tools: [{service: trading-api, allow: [nope_one]}]\n", 1)
	text = strings.Replace(text, "        - service: trading-api\n          allow: all\n", "        - service: trading-api\n          allow: [nope_two]\n", 1)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Build(context.Background(), loadPod(t, dir), Options{})
	var many pod.Errors
	if !errors.As(err, &many) || len(many) != 2 {
		t.Fatalf("want both agents' problems, got %v", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "2 problems:") || strings.Index(msg, `"nope_one"`) > strings.Index(msg, `"nope_two"`) || strings.Index(msg, `"nope_one"`) < 0 {
		t.Fatalf("message:\n%s", msg)
	}
	var first *pod.Error
	if !errors.As(err, &first) || first.Service != "analyst" || !errors.Is(err, pod.ErrInvalid) {
		t.Fatalf("errors.As gives %+v", first)
	}
}
