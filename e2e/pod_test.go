package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// pod is one running copy of an example pod under a unique project name.
type pod struct {
	t       *testing.T
	dir     string // the pod's directory (a copy of the example)
	project string // compose project, = the pod's name
	claw    string // the claw binary
	up      string // what claw up printed
}

// repoRoot is the module root, two levels above this file's package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found above the e2e package: %v", err)
	}
	return root
}

// requireDocker skips the test when no Docker engine with Compose is usable.
func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "docker", "info").Run(); err != nil {
		t.Skipf("Docker engine not available (%v): end-to-end test skipped", err)
	}
	_, errV2 := exec.LookPath("docker-compose")
	if errV2 != nil && exec.CommandContext(ctx, "docker", "compose", "version").Run() != nil {
		t.Skip("neither docker-compose nor `docker compose` is available")
	}
}

// run runs a command with a deadline and returns its combined output,
// failing the test on error.
func run(t *testing.T, dir string, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	out, err := tryRun(dir, timeout, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func tryRun(dir string, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}

// The images are built once per test run, whichever test starts a pod
// first.
var (
	imagesOnce sync.Once
	imagesOut  string
	imagesErr  error
)

// eachCompose runs f once per Compose engine of composeEngines, as a
// subtest named after it, with CLAW_COMPOSE (which claw reads) set to it.
func eachCompose(t *testing.T, f func(t *testing.T)) {
	for _, engine := range composeEngines() {
		name := "compose=detected"
		if engine != "" {
			name = "compose=" + filepath.Base(strings.Fields(engine)[0])
		}
		t.Run(name, func(t *testing.T) {
			// "" lets claw detect the engine.
			t.Setenv("CLAW_COMPOSE", engine)
			f(t)
		})
	}
}

// buildClaw builds this tree's claw into a temporary directory and
// returns its path.
func buildClaw(t *testing.T, root string) string {
	t.Helper()
	claw := filepath.Join(t.TempDir(), "claw")
	run(t, root, 5*time.Minute, "go", "build", "-o", claw, "./cmd/claw")
	return claw
}

// ensureImages builds the pod images from this tree with
// scripts/images.sh, once per test run (CLAW_E2E_REUSE_IMAGES set: the
// images already built are used as they are).
func ensureImages(t *testing.T, root string) {
	t.Helper()
	imagesOnce.Do(func() {
		if os.Getenv("CLAW_E2E_REUSE_IMAGES") == "" {
			imagesOut, imagesErr = tryRun(root, 20*time.Minute, "bash", "scripts/images.sh")
		}
	})
	if imagesErr != nil {
		t.Fatalf("scripts/images.sh: %v\n%s", imagesErr, imagesOut)
	}
}

// composeEngines are the Docker Compose commands the end-to-end tests run
// pods with: CLAW_E2E_COMPOSE, a comma-separated list (CI lists
// docker-compose 1.29 and a Compose v2 binary), else the one claw detects
// ("" here).
func composeEngines() []string {
	list := os.Getenv("CLAW_E2E_COMPOSE")
	if strings.TrimSpace(list) == "" {
		return []string{""}
	}
	var out []string
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// startPod copies examples/<name> to a temporary directory, gives it a
// unique pod name, appends extraServices (YAML indented as entries of
// services:, which must be the pod file's last top-level key), builds claw
// and the images, and runs `claw up -d`. The pod is taken down
// (containers, networks, volumes) when the test ends, whatever its outcome.
func startPod(t *testing.T, example, extraServices string) *pod {
	t.Helper()
	root := repoRoot(t)
	claw := buildClaw(t, root)
	ensureImages(t, root)

	dir := t.TempDir()
	if err := copyExample(dir, filepath.Join(root, "examples", example)); err != nil {
		t.Fatal(err)
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	project := "e2e-" + hex.EncodeToString(suffix[:])
	podFile := filepath.Join(dir, "claw-pod.yml")
	src, err := os.ReadFile(podFile)
	if err != nil {
		t.Fatal(err)
	}
	renamed := bytes.Replace(src, []byte("pod: trading-desk"), []byte("pod: "+project), 1)
	if bytes.Equal(renamed, src) {
		t.Fatal("example pod file has no `pod: trading-desk` line to rename")
	}
	if extraServices != "" {
		last := regexp.MustCompile(`(?m)^[A-Za-z0-9_-]+:`).FindAll(renamed, -1)
		if len(last) == 0 || string(last[len(last)-1]) != "services:" {
			t.Fatal("services: is not the example pod file's last top-level key; extra services cannot be appended")
		}
		renamed = append(append(renamed, '\n'), extraServices...)
	}
	if err := os.WriteFile(podFile, renamed, 0o644); err != nil {
		t.Fatal(err)
	}

	p := &pod{t: t, dir: dir, project: project, claw: claw}
	t.Cleanup(p.down)
	p.up = run(t, dir, 5*time.Minute, claw, "up", "-d")
	return p
}

// down removes everything the pod created, even when claw down fails.
func (p *pod) down() {
	if out, err := tryRun(p.dir, 3*time.Minute, p.claw, "down"); err != nil {
		p.t.Logf("claw down: %v\n%s", err, out)
	}
	label := "label=com.docker.compose.project=" + p.project
	if ids, _ := tryRun("", time.Minute, "docker", "ps", "-aq", "--filter", label); strings.TrimSpace(ids) != "" {
		_, _ = tryRun("", time.Minute, "docker", append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...)
	}
	if ids, _ := tryRun("", time.Minute, "docker", "network", "ls", "-q", "--filter", label); strings.TrimSpace(ids) != "" {
		_, _ = tryRun("", time.Minute, "docker", append([]string{"network", "rm"}, strings.Fields(ids)...)...)
	}
	if ids, _ := tryRun("", time.Minute, "docker", "volume", "ls", "-q", "--filter", label); strings.TrimSpace(ids) != "" {
		_, _ = tryRun("", time.Minute, "docker", append([]string{"volume", "rm", "-f"}, strings.Fields(ids)...)...)
	}
}

// container returns the id of a service's (first) container.
func (p *pod) container(service string) string {
	p.t.Helper()
	out := run(p.t, "", time.Minute, "docker", "ps", "-aq",
		"--filter", "label=com.docker.compose.project="+p.project,
		"--filter", "label=com.docker.compose.service="+service)
	ids := strings.Fields(out)
	if len(ids) == 0 {
		p.t.Fatalf("no container for service %s", service)
	}
	return ids[0]
}

// waitExited waits until a service's container has exited and returns its
// exit code.
func (p *pod) waitExited(service string, timeout time.Duration) int {
	p.t.Helper()
	id := p.container(service)
	deadline := time.Now().Add(timeout)
	for {
		state := strings.TrimSpace(run(p.t, "", time.Minute, "docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", id))
		var status string
		var code int
		fmt.Sscanf(state, "%s %d", &status, &code)
		if status == "exited" || status == "dead" {
			return code
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s still %s after %s; log:\n%s", service, status, timeout, p.logs(service))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// logs returns a service's container log (stdout and stderr).
func (p *pod) logs(service string) string {
	out, _ := tryRun("", time.Minute, "docker", "logs", p.container(service))
	return out
}

// getJSON fetches path from a service's container over the pod's network,
// which the host reaches directly on Linux.
func (p *pod) getJSON(service string, port int, path string, into any) {
	p.t.Helper()
	ips := strings.Fields(run(p.t, "", time.Minute, "docker", "inspect", "-f",
		"{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", p.container(service)))
	var lastErr error
	for _, ip := range ips {
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Get(fmt.Sprintf("http://%s:%d%s", ip, port, path))
		if err != nil {
			lastErr = err
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			lastErr = fmt.Errorf("GET %s on %s: %d %v", path, service, resp.StatusCode, err)
			continue
		}
		if err := json.Unmarshal(body, into); err != nil {
			p.t.Fatalf("GET %s on %s: %v\n%s", path, service, err, body)
		}
		return
	}
	p.t.Fatalf("GET %s on %s (addresses %v): %v", path, service, ips, lastErr)
}

// jsonLines decodes every line of text that is a JSON object into T,
// skipping the rest (compose prefixes, diagnostics).
func jsonLines[T any](text string) []T {
	var out []T
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '{'); i >= 0 {
			var v T
			if json.Unmarshal([]byte(line[i:]), &v) == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// copyExample copies an example pod's sources, leaving out what a run of it
// left behind (make demo, claw up in the example directory): its compiled
// context, provider keys, generated compose file and history, whose
// continuity state would otherwise meet this run's identical conversations.
func copyExample(dst, src string) error {
	skip := map[string]bool{".claw-runtime": true, ".claw-auth": true, "compose.generated.yml": true}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}
