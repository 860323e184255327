package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/compile"
)

const podCase = "../../internal/compile/testdata/trading-desk"

// fakeEngine records compose invocations instead of running Docker.
type fakeEngine struct {
	cfg        EngineConfig
	calls      [][]string
	containers []Container
}

func (e *fakeEngine) Compose(_ context.Context, args ...string) error {
	e.calls = append(e.calls, args)
	return nil
}

func (e *fakeEngine) Containers(context.Context) ([]Container, error) {
	e.calls = append(e.calls, []string{"<containers>"})
	return e.containers, nil
}

type harness struct {
	f        *Factory
	out, err bytes.Buffer
	engine   *fakeEngine
}

func newHarness() *harness {
	h := &harness{engine: &fakeEngine{}}
	h.f = &Factory{
		IO:  IOStreams{In: strings.NewReader(""), Out: &h.out, ErrOut: &h.err},
		Env: nil,
		Engine: func(_ context.Context, cfg EngineConfig) (Engine, error) {
			h.engine.cfg = cfg
			return h.engine, nil
		},
		Images: func() compile.ImageSource { return nil },
	}
	return h
}

func (h *harness) run(args ...string) int {
	return Main(context.Background(), args, h.f)
}

// copyPod copies the trading-desk golden pod to a temporary directory.
func copyPod(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	copyTree(t, filepath.Join(podCase, "pod"), dst)
	return dst
}

func TestCompilePrintsSummary(t *testing.T) {
	dir := copyPod(t)
	h := newHarness()
	if code := h.run("compile", "-f", filepath.Join(dir, "claw-pod.yml")); code != ExitOK {
		t.Fatalf("exit %d: %s", code, h.err.String())
	}
	want, err := os.ReadFile(filepath.Join(podCase, "want", "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := h.out.String()
	summary, tail, _ := strings.Cut(got, "\nwrote ")
	if summary != string(want) {
		t.Errorf("summary differs\n--- got\n%s\n--- want\n%s", summary, want)
	}
	if !strings.HasPrefix(tail, "18 files") {
		t.Errorf("unexpected tail %q", tail)
	}
	for _, p := range []string{compile.GeneratedFile, compile.ProvidersFile, ".claw-runtime/context/analyst/tools.json"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("missing %s: %v", p, err)
		}
	}
	if len(h.engine.calls) != 0 {
		t.Errorf("compile touched Docker: %v", h.engine.calls)
	}
}

func TestExitCodes(t *testing.T) {
	dir := copyPod(t)
	pod := filepath.Join(dir, "claw-pod.yml")
	if err := os.WriteFile(filepath.Join(dir, "broken.yml"), []byte("services:\n  a:\n    image: x\n    x-claw:\n      tools: [b]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"compile", "-f", pod, "-q"}, ExitOK, ""},
		{[]string{"compile", "--no-such-flag"}, ExitUsage, "unknown flag"},
		{[]string{"compile", "--no-such-flag"}, ExitUsage, "Run 'claw compile --help' for usage."},
		{[]string{"compile", "extra"}, ExitUsage, "takes no arguments"},
		{[]string{"frobnicate"}, ExitUsage, "unknown command"},
		{[]string{"frobnicate"}, ExitUsage, "Run 'claw --help' for usage."},
		{[]string{"--no-such-flag"}, ExitUsage, "Run 'claw --help' for usage."},
		{[]string{"logs", "a", "b"}, ExitUsage, "at most 1"},
		{[]string{"logs", "a", "b"}, ExitUsage, "Run 'claw logs --help' for usage."},
		{[]string{"up", "-f", pod, "--wait-timeout", "0"}, ExitUsage, "--wait-timeout 0s: want a positive duration"},
		{[]string{"up", "-f", pod, "--wait-timeout", "0"}, ExitUsage, "Run 'claw up --help' for usage."},
		{[]string{"compile", "-f", filepath.Join(dir, "missing.yml")}, ExitFailure, "file not found"},
		{[]string{"compile", "-f", filepath.Join(dir, "broken.yml")}, ExitFailure, `service "a": x-claw.tools`},
	} {
		h := newHarness()
		if code := h.run(tc.args...); code != tc.code || !strings.Contains(h.err.String(), tc.msg) {
			t.Errorf("claw %v: exit %d (want %d), stderr %q (want %q)", tc.args, code, tc.code, h.err.String(), tc.msg)
		}
	}
}

// A pod whose services have one problem each, one the decoder's and one
// the compiler's, gets both from one run of every compiling verb, and
// nothing is written.
func TestEveryProblemInOneRun(t *testing.T) {
	const twoServices = "../../internal/compile/testdata/err-two-services"
	for _, verb := range []string{"compile", "up"} {
		dir := t.TempDir()
		copyTree(t, filepath.Join(twoServices, "pod"), dir)
		h := newHarness()
		code := h.run(verb, "-f", filepath.Join(dir, "claw-pod.yml"))
		stderr := h.err.String()
		if code != ExitFailure || !strings.Contains(stderr, "2 problems:") ||
			!strings.Contains(stderr, `service "a": x-claw.tools[0].allow: tool "drop_table"`) ||
			!strings.Contains(stderr, `service "b": x-claw.tools: managed tools need the cllama proxy`) {
			t.Errorf("claw %s: exit %d, stderr %q; want both services' problems", verb, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, compile.GeneratedFile)); err == nil {
			t.Errorf("claw %s wrote %s for a pod with problems", verb, compile.GeneratedFile)
		}
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, verb := range append([]string{""}, sortedVerbs()...) {
		h := newHarness()
		args := []string{"--help"}
		if verb != "" {
			args = []string{verb, "--help"}
		}
		if code := h.run(args...); code != ExitOK || !strings.Contains(h.out.String(), "Usage:") {
			t.Errorf("claw %s --help: exit %d, output %q", verb, code, h.out.String())
		}
	}
}

func sortedVerbs() []string {
	var names []string
	for n := range verbs {
		names = append(names, n)
	}
	return names
}

func TestEngineVerbs(t *testing.T) {
	dir := copyPod(t)
	pod := filepath.Join(dir, "claw-pod.yml")
	h := newHarness()
	if code := h.run("down", "-f", pod); code != ExitFailure || !strings.Contains(h.err.String(), "run `claw up`") {
		t.Fatalf("down before up: exit %d, %s", code, h.err.String())
	}
	for _, tc := range []struct {
		args []string
		want [][]string
	}{
		// up then asks where the admin listener is published, to print it.
		{[]string{"up", "-f", pod, "-d"}, [][]string{{"up", "-d"}, {"<containers>"}}},
		{[]string{"ps", "-f", pod}, [][]string{{"ps"}}},
		{[]string{"logs", "-f", pod, "--follow", "--tail", "10", "analyst"}, [][]string{{"logs", "--no-color", "-f", "--tail", "10", "analyst"}}},
		{[]string{"logs", "--file", pod, "cllama"}, [][]string{{"logs", "--no-color", "cllama"}}},
		{[]string{"down", "-f", pod, "-v"}, [][]string{{"down", "--remove-orphans", "-v"}}},
	} {
		h := newHarness()
		if code := h.run(tc.args...); code != ExitOK {
			t.Fatalf("claw %v: exit %d: %s", tc.args, code, h.err.String())
		}
		if !reflect.DeepEqual(h.engine.calls, tc.want) {
			t.Errorf("claw %v ran compose %v, want %v", tc.args, h.engine.calls, tc.want)
		}
		if h.engine.cfg.Project != "trading-desk" || h.engine.cfg.File != compile.GeneratedFile || h.engine.cfg.Dir != dir {
			t.Errorf("engine config %+v", h.engine.cfg)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, compile.HistoryDir)); err != nil {
		t.Errorf("up did not create the history directory: %v", err)
	}
}

func TestProjectName(t *testing.T) {
	for in, want := range map[string]string{"trading-desk": "trading-desk", "My Pod!": "my-pod", "": "claw", "__": "claw"} {
		if got := ProjectName(in); got != want {
			t.Errorf("ProjectName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBinary builds the real claw and runs it as an operator would.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "claw")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := copyPod(t)
	cmd := exec.Command(bin, "compile")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "trading-api__execute_trade -> trading-api.execute_trade") {
		t.Fatalf("claw compile: %v\n%s", err, out)
	}
	cmd = exec.Command(bin, "compile", "--bogus")
	cmd.Dir = dir
	err = cmd.Run()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != ExitUsage {
		t.Fatalf("usage error exit: %v", err)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

func TestUpRefusesUnrunnablePod(t *testing.T) {
	dir := t.TempDir()
	pod := filepath.Join(dir, "claw-pod.yml")
	if err := os.WriteFile(pod, []byte("services:\n  a:\n    x-claw:\n      cllama: passthrough\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness()
	if code := h.run("compile", "-f", pod, "-q"); code != ExitOK || !strings.Contains(h.err.String(), "neither image nor build") {
		t.Fatalf("compile: exit %d, %s", code, h.err.String())
	}
	h = newHarness()
	if code := h.run("up", "-f", pod); code != ExitFailure || len(h.engine.calls) != 0 || !strings.Contains(h.err.String(), "give each an image") {
		t.Fatalf("up: exit %d, calls %v, %s", code, h.engine.calls, h.err.String())
	}
}

func TestVersion(t *testing.T) {
	h := newHarness()
	if code := h.run("--version"); code != ExitOK || !strings.HasPrefix(h.out.String(), "claw ") || !strings.Contains(h.out.String(), "go1") || strings.Count(h.out.String(), "\n") != 1 {
		t.Fatalf("exit %d, %q", code, h.out.String())
	}
}

// TestLogsFileAndFollow: -f is the pod file, as in every verb; a name
// that is not a service says so and names the services; the habits of
// `docker compose logs -f` get a hint.
func TestLogsFileAndFollow(t *testing.T) {
	dir := copyPod(t)
	pod := filepath.Join(dir, "claw-pod.yml")
	if code := newHarness().run("compile", "-q", "-f", pod); code != ExitOK {
		t.Fatal("compile failed")
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "nosuch"}, `no service "nosuch" in the pod (services: analyst, cllama, executor, trading-api)`},
		{[]string{"logs", "-f", "cllama"}, "-f cllama: no such pod file; -f names the pod file in every claw verb (to follow the logs, use --follow)"},
		{[]string{"logs", "cllama", "-f"}, "flag needs an argument: 'f' in -f; -f names the pod file in every claw verb (to follow the logs, use --follow)"},
		{[]string{"logs", "claw-pod.yml"}, "; to name the pod file, use -f claw-pod.yml"},
	} {
		h := newHarness()
		if code := h.run(tc.args...); code != ExitUsage || !strings.Contains(h.err.String(), tc.want) || len(h.engine.calls) != 0 {
			t.Errorf("claw %v: exit %d, calls %v, stderr %q; want %q", tc.args, code, h.engine.calls, h.err.String(), tc.want)
		}
	}
}

// TestPsJSON: one document, every service of the pod with its state,
// health and ports; a service without a container is "absent".
func TestPsJSON(t *testing.T) {
	dir := copyPod(t)
	pod := filepath.Join(dir, "claw-pod.yml")
	h := newHarness()
	if code := h.run("up", "-d", "-f", pod); code != ExitOK {
		t.Fatalf("up: %s", h.err.String())
	}
	h = newHarness()
	h.engine.containers = []Container{
		{Service: "cllama", Name: "trading-desk_cllama_1", ID: "c1", State: "running", Health: "healthy", Ports: []Port{{Target: "8080/tcp", Published: "127.0.0.1:18080"}}},
		{Service: "analyst", Name: "trading-desk_analyst_1", ID: "a1", State: "exited", ExitCode: 3, Ports: []Port{}},
	}
	if code := h.run("ps", "--json", "-f", pod); code != ExitOK {
		t.Fatalf("ps --json: exit %d: %s", code, h.err.String())
	}
	var doc struct {
		Pod, Project string
		Services     []struct {
			Name, State, Health string
			Ports               []Port
			Containers          []Container
		}
	}
	if err := json.Unmarshal(h.out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, h.out.String())
	}
	got := map[string]string{}
	for _, s := range doc.Services {
		got[s.Name] = s.State + "/" + s.Health
	}
	want := map[string]string{"analyst": "exited/", "cllama": "running/healthy", "executor": "absent/", "trading-api": "absent/"}
	if doc.Pod != "trading-desk" || !reflect.DeepEqual(got, want) {
		t.Fatalf("pod %q services %v, want %v\n%s", doc.Pod, got, want, h.out.String())
	}
	if doc.Services[1].Ports[0].Published != "127.0.0.1:18080" || doc.Services[0].Containers[0].ExitCode != 3 {
		t.Errorf("ports or exit code lost:\n%s", h.out.String())
	}
	if len(h.engine.calls) != 1 || h.engine.calls[0][0] != "<containers>" {
		t.Errorf("engine calls %v", h.engine.calls)
	}
}

func TestPublishCllamaFlag(t *testing.T) {
	for in, want := range map[string]string{"18080": "127.0.0.1:18080", "0.0.0.0:9000": "0.0.0.0:9000", "127.0.0.1:1": "127.0.0.1:1"} {
		if got, err := publishAddress("--publish-cllama", in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "65536", "x", "localhost:80", "[::1]:80", "1.2.3.4:"} {
		if _, err := publishAddress("--publish-cllama", in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	dir := copyPod(t)
	pod := filepath.Join(dir, "claw-pod.yml")
	h := newHarness()
	if code := h.run("up", "-d", "--publish-cllama", "18080", "-f", pod); code != ExitOK || !strings.Contains(h.err.String(), "claw: cllama is published on the host at http://127.0.0.1:18080 (OpenAI base URL http://127.0.0.1:18080/v1") {
		t.Fatalf("up: exit %d: %s", code, h.err.String())
	}
	gen, _ := os.ReadFile(filepath.Join(dir, compile.GeneratedFile))
	if !strings.Contains(string(gen), "- 127.0.0.1:18080:8080") {
		t.Fatalf("not published:\n%s", gen)
	}
	if code := newHarness().run("up", "-d", "--publish-cllama", "localhost:80", "-f", pod); code != ExitUsage {
		t.Errorf("a host name: exit %d", code)
	}
}

// --publish-metrics turns cllama's metrics on and publishes them; with
// --publish-cllama both ports are published.
func TestPublishMetricsFlag(t *testing.T) {
	dir := copyPod(t)
	pod := filepath.Join(dir, "claw-pod.yml")
	h := newHarness()
	if code := h.run("up", "-d", "--publish-metrics", "19090", "--publish-cllama", "18080", "-f", pod); code != ExitOK ||
		!strings.Contains(h.err.String(), "claw: cllama's metrics are published on the host at http://127.0.0.1:19090/metrics") {
		t.Fatalf("up: exit %d: %s", code, h.err.String())
	}
	gen, _ := os.ReadFile(filepath.Join(dir, compile.GeneratedFile))
	for _, want := range []string{"- 127.0.0.1:19090:9090", "- 127.0.0.1:18080:8080", "CLLAMA_METRICS_ADDR: :9090"} {
		if !strings.Contains(string(gen), want) {
			t.Fatalf("no %q in:\n%s", want, gen)
		}
	}
}
