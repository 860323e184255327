package discover

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// dockerOrSkip skips unless a Docker daemon answers.
func dockerOrSkip(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := exec.CommandContext(ctx, "docker", "info").Run(); err != nil {
		t.Skip("the Docker daemon is not reachable")
	}
}

// testImage builds a FROM-scratch image holding the wrapper (entrypoint)
// and claw-mcp-echo, like scripts/images.sh, and removes it afterwards.
func testImage(t *testing.T) string {
	t.Helper()
	ctxDir := t.TempDir()
	for _, b := range []string{"claw-mcp-stdio", "claw-mcp-echo"} {
		data, err := os.ReadFile(filepath.Join(binDir, b))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctxDir, b), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	df := "FROM scratch\nCOPY claw-mcp-stdio /claw-mcp-stdio\nCOPY claw-mcp-echo /claw-mcp-echo\nENTRYPOINT [\"/claw-mcp-stdio\"]\n"
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	tag := "clawgo-test/discover-" + hex.EncodeToString(suffix[:]) + ":test"
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })
	return tag
}

func leftoverContainers(t *testing.T, service string) string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-a", "-q", "--filter", "label="+ContainerLabel+"="+service).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestDiscoverContainer runs discovery the default way: the wrapper in a
// short-lived container from the service's image, with its environment and
// a bind mount, and checks the snapshot and that the container is gone.
func TestDiscoverContainer(t *testing.T) {
	dockerOrSkip(t)
	image := testImage(t)
	mount := t.TempDir()
	service := "echo-" + strings.ReplaceAll(filepath.Base(mount), "_", "-")
	tg := Target{
		Service: service, Command: "/claw-mcp-echo", Image: image,
		Env:     map[string]string{"SOME_KEY": "value", envAddr: "127.0.0.1:9123"},
		Volumes: []Mount{{Type: "bind", Source: mount, Target: "/data", ReadOnly: true}},
		Port:    "9123", Path: DefaultPath, Dir: t.TempDir(),
	}
	res, err := Discover(context.Background(), tg, Options{Mode: ModeContainer, Pull: "never", Now: fixedNow, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	res.Snapshot.Discovery.Service = "echo"
	res.Snapshot.Discovery.Image = "clawgo/claw-mcp-stdio:dev"
	data, err := res.Snapshot.Render()
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "echo-container.golden.json", data)
	if left := leftoverContainers(t, service); left != "" {
		t.Errorf("discovery left containers behind: %s", left)
	}
}

// TestDiscoverContainerFailure: a server that cannot start fails with the
// wrapper's reason and the container is removed.
func TestDiscoverContainerFailure(t *testing.T) {
	dockerOrSkip(t)
	image := testImage(t)
	service := "broken-" + hex.EncodeToString([]byte(t.Name()))[:8]
	tg := Target{Service: service, Command: "/claw-mcp-echo", Args: []string{"-exit-at-start", "2"}, Image: image,
		Env: map[string]string{}, Port: DefaultPort, Path: DefaultPath}
	_, err := Discover(context.Background(), tg, Options{Mode: ModeContainer, Pull: "never", Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("err = %v", err)
	}
	if left := leftoverContainers(t, service); left != "" {
		t.Errorf("discovery left containers behind: %s", left)
	}
	tg.Image = "clawgo-test/absent-image:none"
	if _, err := Discover(context.Background(), tg, Options{Mode: ModeContainer, Timeout: time.Minute}); err == nil || !strings.Contains(err.Error(), "is not present locally") {
		t.Fatalf("absent image (never pulled by default): %v", err)
	}
	tg.Image = ""
	if _, err := Discover(context.Background(), tg, Options{}); err == nil || !strings.Contains(err.Error(), "has no image") {
		t.Fatalf("image-less service: %v", err)
	}
}

func TestDockerRunArgs(t *testing.T) {
	tg := Target{
		Service: "search", Command: "npx", Args: []string{"-y", "search-mcp"}, Image: "img:1",
		Env:        map[string]string{"API_KEY": "secret", "PATH": "/bin", envAddr: "0.0.0.0:9000"},
		Volumes:    []Mount{{Type: "bind", Source: "/src", Target: "/dst", ReadOnly: true}, {Type: "volume", Source: "pod_cache", Target: "/cache"}, {Type: "tmpfs", Target: "/tmp"}},
		Entrypoint: []string{"/claw-mcp-stdio", "-max-backoff", "1s"}, Cmd: []string{"--"},
		User: "1000", WorkingDir: "/work", Port: "9000", Path: "/mcp",
	}
	args, env := dockerRunArgs(tg, Options{Pull: "never"}, "claw-discover-search-1")
	joined := strings.Join(args, " ")
	for _, want := range []string{
		"run --rm --name claw-discover-search-1 --label io.clawdapus.discover=search -p 127.0.0.1::9000 --pull never",
		"-e API_KEY -e CLAW_MCP_STDIO_ADDR -e CLAW_MCP_STDIO_ARGS -e CLAW_MCP_STDIO_COMMAND -e CLAW_MCP_STDIO_PATH -e PATH=/bin",
		"-v /src:/dst:ro -v pod_cache:/cache --tmpfs /tmp --user 1000 --workdir /work --entrypoint /claw-mcp-stdio img:1 -max-backoff 1s --",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("args lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "secret") {
		t.Errorf("a secret is on docker's command line: %s", joined)
	}
	for _, want := range []string{"API_KEY=secret", envAddr + "=:9000", envArgs + `=["-y","search-mcp"]`, envCommand + "=npx"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %q: %v", want, env)
		}
	}
}

func TestPublishedAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:49153\n":                "127.0.0.1:49153",
		"0.0.0.0:5\n[::]:5\n":              "127.0.0.1:5",
		"":                                 "",
		"Error: No public port '8080/tcp'": "",
	} {
		if got := publishedAddr(in); got != want {
			t.Errorf("publishedAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
