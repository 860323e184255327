package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests in this file run the real claw binary against a fake compose
// command (a shell script named through CLAW_COMPOSE) and a fake or
// unreachable Docker engine: what an operator's shell sees, without a pod.

var (
	clawBinOnce sync.Once
	clawBinPath string
	clawBinErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if clawBinPath != "" {
		os.RemoveAll(filepath.Dir(clawBinPath))
	}
	os.Exit(code)
}

// clawBinary builds claw once for the package's tests.
func clawBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	clawBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "claw-bin")
		if err != nil {
			clawBinErr = err
			return
		}
		clawBinPath = filepath.Join(dir, "claw")
		if out, err := exec.Command("go", "build", "-o", clawBinPath, ".").CombinedOutput(); err != nil {
			clawBinErr = &buildError{err: err, out: out}
		}
	})
	if clawBinErr != nil {
		t.Fatal(clawBinErr)
	}
	return clawBinPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }

// fakeDockerd serves the Docker engine API on a unix socket: GET /_ping,
// and whatever extra handles. It returns the DOCKER_HOST value.
func fakeDockerd(t *testing.T, extra http.Handler) string {
	t.Helper()
	// A short directory: unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "dockerd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_ping", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("OK")) })
	if extra != nil {
		mux.Handle("/", extra)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "unix://" + sock
}

// fakeCompose writes a compose stand-in that appends its arguments, one
// line per call, to a record file, then runs body. It returns the value
// for CLAW_COMPOSE and the record file.
func fakeCompose(t *testing.T, body string) (command, record string) {
	t.Helper()
	dir := t.TempDir()
	record = filepath.Join(dir, "calls")
	command = filepath.Join(dir, "compose")
	script := "#!/bin/sh\necho \"$*\" >> '" + record + "'\n" + body + "\n"
	if err := os.WriteFile(command, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return command, record
}

// clawRun is one run of the binary.
type clawRun struct {
	code           int
	stdout, stderr string
}

// runClawBinary runs claw in dir with env added to the test's environment.
func runClawBinary(t *testing.T, dir string, env []string, args ...string) clawRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, clawBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := clawRun{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestUnreachableEngine: with no engine at DOCKER_HOST, the verbs that run
// compose say so in one line and run nothing.
func TestUnreachableEngine(t *testing.T) {
	dir := copyPod(t)
	compose, record := fakeCompose(t, "echo 'Traceback (most recent call last):' >&2; exit 1")
	env := []string{"CLAW_COMPOSE=" + compose, "DOCKER_HOST=unix:///nonexistent"}
	// ps, down and logs need a compiled pod.
	if r := runClawBinary(t, dir, env, "compile", "-q"); r.code != 0 {
		t.Fatalf("compile: %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"up", "-d"}, {"ps"}, {"down"}, {"logs"}} {
		r := runClawBinary(t, dir, env, args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != ExitFailure || len(lines) != 1 || !strings.Contains(lines[0], "cannot reach the Docker engine at unix:///nonexistent (DOCKER_HOST): no such socket") {
			t.Errorf("claw %v: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
	}
	if data, err := os.ReadFile(record); err == nil {
		t.Errorf("compose ran: %s", data)
	}
}

// liveGrants reads an agent's granted tool names from the live context,
// the way cllama reaches it.
func liveGrants(t *testing.T, dir, agent string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".claw-runtime", "context", agent, "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tm struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(data, &tm); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tm.Tools {
		names = append(names, tool.Name)
	}
	return strings.Join(names, " ")
}

// TestApplyOnUpNotOnCompile: compiling an edited pod while it runs leaves
// the live context (what cllama reads) alone and says that `claw up`
// applies it; `claw up` on the running pod does.
func TestApplyOnUpNotOnCompile(t *testing.T) {
	dir := copyPod(t)
	compose, record := fakeCompose(t, "")
	env := []string{"CLAW_COMPOSE=" + compose, "DOCKER_HOST=" + fakeDockerd(t, nil)}
	if r := runClawBinary(t, dir, env, "up", "-d"); r.code != 0 {
		t.Fatalf("up: %d %s", r.code, r.stderr)
	}
	wide := "trading-api.get_market_context trading-api.execute_trade"
	if got := liveGrants(t, dir, "executor"); got != wide {
		t.Fatalf("live grants after up: %q", got)
	}
	file := filepath.Join(dir, "claw-pod.yml")
	data, _ := os.ReadFile(file)
	edited := bytes.Replace(data, []byte("          allow: all"), []byte("          allow: [get_market_context]"), 1)
	if bytes.Equal(edited, data) {
		t.Fatal("the trading desk pod changed; update the edit")
	}
	if err := os.WriteFile(file, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runClawBinary(t, dir, env, "compile", "-q")
	if r.code != 0 || strings.TrimSpace(r.stderr) != "claw: the pod's live context differs (executor) and stays as it is: `claw up` applies this compile" {
		t.Fatalf("compile: exit %d, stderr %q", r.code, r.stderr)
	}
	if got := liveGrants(t, dir, "executor"); got != wide {
		t.Fatalf("compile changed the live grants: %q", got)
	}
	// The reporting verbs describe the compile, which matches the file.
	if r := runClawBinary(t, dir, env, "inspect", "executor", "--json"); r.code != 0 || strings.Contains(r.stdout, "execute_trade") {
		t.Fatalf("inspect: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
	r = runClawBinary(t, dir, env, "up", "-d")
	if r.code != 0 || !strings.Contains(r.stderr, "claw: applied: changed executor\n") {
		t.Fatalf("up: exit %d, stderr %s", r.code, r.stderr)
	}
	if got := liveGrants(t, dir, "executor"); got != "trading-api.get_market_context" {
		t.Fatalf("up did not apply: %q", got)
	}
	calls, _ := os.ReadFile(record)
	if n := strings.Count(string(calls), " up -d"); n != 2 {
		t.Fatalf("compose ran up %d times: %s", n, calls)
	}
	// Up again with nothing new applies nothing.
	if r := runClawBinary(t, dir, env, "up", "-d"); r.code != 0 || strings.Contains(r.stderr, "applied") {
		t.Fatalf("up again: exit %d, stderr %s", r.code, r.stderr)
	}
}

// fakeDockerCLI puts a docker stand-in first on PATH: `ps` prints the ids
// in <dir>/ids, `inspect` prints <dir>/inspect.json, `image inspect`
// knows every image (without labels) but those listed in <dir>/absent,
// and `pull` finds none. It returns the directory to write those files to
// and the PATH value.
func fakeDockerCLI(t *testing.T) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	script := `#!/bin/sh
d=$(dirname "$0")
for a; do last=$a; done
case "$1" in
ps) cat "$d/ids" ;;
inspect) cat "$d/inspect.json" ;;
image) if grep -qxF "$last" "$d/absent" 2>/dev/null; then echo "Error: No such image: $last" >&2; exit 1; fi; echo null ;;
pull) echo "Error response from daemon: pull access denied for ${last%:*}, repository does not exist or may require 'docker login'" >&2; exit 1 ;;
*) echo "unexpected docker $*" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// inspectJSON is `docker inspect` of the trading desk's containers, with
// cllama's health as given and the analyst in state analyst.
func inspectJSON(cllamaHealth, analyst string) string {
	c := func(id, svc, state, health string, code int, ports string) string {
		h := "null"
		if health != "" {
			h = `{"Status":"` + health + `","Log":[{"Output":"GET /health: connection refused\n"}]}`
		}
		return `{"Id":"` + id + `0123456789abcdef","Name":"/trading-desk_` + svc + `_1",` +
			`"Config":{"Labels":{"com.docker.compose.project":"trading-desk","com.docker.compose.service":"` + svc + `"}},` +
			`"State":{"Status":"` + state + `","ExitCode":` + strconv.Itoa(code) + `,"Health":` + h + `},` +
			`"NetworkSettings":{"Ports":` + ports + `}}`
	}
	code := 0
	if analyst == "exited" {
		code = 3
	}
	return "[" + strings.Join([]string{
		c("c1", "cllama", "running", cllamaHealth, 0, `{"8080/tcp":[{"HostIp":"127.0.0.1","HostPort":"18080"}]}`),
		c("a1", "analyst", analyst, "", code, `{}`),
		c("e1", "executor", "running", "", 0, `{}`),
		c("t1", "trading-api", "running", "", 0, `{"4000/tcp":null}`),
	}, ",") + "]"
}

// TestUpWait: --wait starts the pod in the background and returns once
// cllama is healthy and the rest run; a service that exits, or a wait
// that runs out, is named.
func TestUpWait(t *testing.T) {
	dir := copyPod(t)
	compose, record := fakeCompose(t, "")
	docker, path := fakeDockerCLI(t)
	env := []string{"CLAW_COMPOSE=" + compose, "DOCKER_HOST=" + fakeDockerd(t, nil), "PATH=" + path}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(docker, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ids", "c1\na1\ne1\nt1\n")

	write("inspect.json", inspectJSON("starting", "running"))
	go func() {
		time.Sleep(700 * time.Millisecond)
		write("inspect.json", inspectJSON("healthy", "running"))
	}()
	r := runClawBinary(t, dir, env, "up", "--wait")
	if r.code != 0 || !strings.Contains(r.stderr, "claw: pod trading-desk is ready: 4 service(s) running, 1 of them healthy\n") {
		t.Fatalf("up --wait: exit %d\n%s", r.code, r.stderr)
	}
	if calls, _ := os.ReadFile(record); !strings.Contains(string(calls), " up -d") {
		t.Fatalf("--wait did not start the pod in the background: %s", calls)
	}

	write("inspect.json", inspectJSON("starting", "exited"))
	r = runClawBinary(t, dir, env, "up", "--wait")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "claw: service analyst exited (container trading-desk_analyst_1, exit code 3); see `claw logs analyst`") {
		t.Fatalf("an exited service: exit %d\n%s", r.code, r.stderr)
	}

	write("inspect.json", inspectJSON("unhealthy", "running"))
	r = runClawBinary(t, dir, env, "up", "--wait")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "claw: service cllama is unhealthy (container trading-desk_cllama_1): GET /health: connection refused; see `claw logs cllama`") {
		t.Fatalf("an unhealthy cllama: exit %d\n%s", r.code, r.stderr)
	}

	write("inspect.json", inspectJSON("starting", "running"))
	start := time.Now()
	r = runClawBinary(t, dir, env, "up", "--wait", "--wait-timeout", "1s")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "claw: pod trading-desk is not ready after 1s: cllama (health: starting)") {
		t.Fatalf("timeout: exit %d\n%s", r.code, r.stderr)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the wait took %s", took)
	}

	// ps --json reads the same.
	r = runClawBinary(t, dir, env, "ps", "--json")
	var doc psDocument
	if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil {
		t.Fatalf("ps --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(doc.Services) != 4 || doc.Services[1].Name != "cllama" || doc.Services[1].Health != "starting" || doc.Services[1].Ports[0].Published != "127.0.0.1:18080" || doc.Services[3].Ports[0] != (Port{Target: "4000/tcp"}) {
		t.Fatalf("ps --json:\n%s", r.stdout)
	}
}
