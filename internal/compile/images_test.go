package compile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeImages is an in-memory ImageSource.
type fakeImages map[string]struct {
	labels map[string]string
	files  map[string]string
}

func (f fakeImages) Labels(_ context.Context, image string) (map[string]string, bool, error) {
	img, ok := f[image]
	return img.labels, ok, nil
}

func (f fakeImages) ReadFile(_ context.Context, image, p string) ([]byte, error) {
	data, ok := f[image].files[p]
	if !ok {
		return nil, fmt.Errorf("%s: %w", p, ErrNotInImage)
	}
	return []byte(data), nil
}

const imagePod = `x-claw:
  pod: images
services:
  agent:
    image: runner
    x-claw:
      cllama: passthrough
      surfaces: ["service://api"]
      tools: [api]
  api:
    image: %s
    expose: ["80"]
`

const imageDescriptor = `{"version":2,"tools":[{"name":"ping","inputSchema":{"type":"object"},"http":{"method":"GET","path":"/ping"}}],"skill":"docs/skill.md"}`

func TestImageDescriptorLookup(t *testing.T) {
	images := fakeImages{
		"labelled": {labels: map[string]string{DescribeLabel: "/srv/describe.json"},
			files: map[string]string{"/srv/describe.json": imageDescriptor, "/srv/docs/skill.md": "# from label dir\n"}},
		"baked": {labels: map[string]string{},
			files: map[string]string{"/.claw-describe.json": imageDescriptor, "/docs/skill.md": "# baked\n"}},
		"mcp":          {files: map[string]string{"/.claw-tools.json": `{"tools":[{"name":"ping","inputSchema":{"type":"object"}}]}`}},
		"broken-label": {labels: map[string]string{DescribeLabel: "/nope.json"}},
	}
	for _, tc := range []struct{ image, kind, skill, err string }{
		{"labelled", SourceImageLabel, "# from label dir\n", ""},
		{"baked", SourceImage, "# baked\n", ""},
		{"mcp", SourceImage, "", ""},
		{"broken-label", "", "", "which is not in the image"},
		{"absent", "", "", "no descriptor found"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			dir := t.TempDir()
			mustWrite(t, filepath.Join(dir, "claw-pod.yml"), []byte(fmt.Sprintf(imagePod, tc.image)))
			p := loadPod(t, dir)
			res, err := Build(context.Background(), p, Options{Images: images, Rand: zeroReader{}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Descriptors[0].Kind != tc.kind {
				t.Errorf("kind %s, want %s", res.Descriptors[0].Kind, tc.kind)
			}
			a := res.Agents[0]
			if len(a.Tools) != 1 || string(a.skillData["api"]) != tc.skill {
				t.Errorf("tools %v, skill %q", a.Tools, a.skillData["api"])
			}
			// compile without images must not find it (claw compile touches no Docker).
			if _, err := Build(context.Background(), p, Options{Rand: zeroReader{}}); err == nil || !strings.Contains(err.Error(), "--images") {
				t.Errorf("without images: %v", err)
			}
		})
	}
}

// TestDockerImages builds a FROM scratch image (nothing is pulled) with a
// label and a baked descriptor, and reads them through the docker CLI.
func TestDockerImages(t *testing.T) {
	if testing.Short() {
		t.Skip("uses Docker")
	}
	if _, err := exec.LookPath("docker"); err != nil || exec.Command("docker", "info").Run() != nil {
		t.Skip("no Docker engine")
	}
	buf := make([]byte, 4)
	_, _ = rand.Read(buf)
	tag := "clawgo-test/describe:" + hex.EncodeToString(buf)
	ctxDir := t.TempDir()
	mustWrite(t, filepath.Join(ctxDir, "describe.json"), []byte(imageDescriptor))
	mustWrite(t, filepath.Join(ctxDir, "skill.md"), []byte("# skill in image\n"))
	mustWrite(t, filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nLABEL claw.describe=/etc/claw/describe.json\nCOPY describe.json /etc/claw/describe.json\nCOPY skill.md /etc/claw/docs/skill.md\n"))
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, ctxDir).CombinedOutput(); err != nil {
		t.Skipf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })
	ctx := context.Background()
	labels, present, err := DockerImages{}.Labels(ctx, tag)
	if err != nil || !present || labels[DescribeLabel] != "/etc/claw/describe.json" {
		t.Fatalf("labels %v present %v err %v", labels, present, err)
	}
	if _, present, _ := (DockerImages{}).Labels(ctx, tag+"-absent"); present {
		t.Error("absent image reported present")
	}
	if _, err := (DockerImages{}).ReadFile(ctx, tag, "/nope"); err == nil {
		t.Error("missing file read")
	}
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "claw-pod.yml"), []byte(fmt.Sprintf(imagePod, tag)))
	res, err := Build(ctx, loadPod(t, dir), Options{Images: DockerImages{}, Rand: zeroReader{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Agents[0].skillData["api"]); got != "# skill in image\n" || res.Descriptors[0].Kind != SourceImageLabel {
		t.Fatalf("skill %q kind %s", got, res.Descriptors[0].Kind)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// fakeDocker writes an executable standing in for the docker CLI: `create`
// prints a container id, `cp` runs cpScript, anything else succeeds.
func fakeDocker(t *testing.T, cpScript string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "docker")
	script := "#!/bin/sh\ncase \"$1\" in\ncreate) echo c0ffee ;;\ncp) " + cpScript + " ;;\n*) exit 0 ;;\nesac\n"
	mustWrite(t, bin, []byte(script))
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestDockerImagesReadFileIsBounded: what `docker cp` streams is read up to
// the file limit, not buffered whole (a label may name a huge file or a
// directory such as /).
func TestDockerImagesReadFileIsBounded(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	const streamed = 256 << 20
	bin := fakeDocker(t, fmt.Sprintf("yes | head -c %d", streamed))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := DockerImages{Binary: bin}.ReadFile(context.Background(), "img", "/")
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("garbage from docker cp was accepted")
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 4*maxImageFile {
		t.Fatalf("ReadFile allocated %d MiB for a %d MiB stream; it must stop at the limit", grown>>20, streamed>>20)
	}
}

// TestDockerImagesUnreachableEngine: an engine that does not answer is an
// error, not an absent image; an absent image is still absent.
func TestDockerImagesUnreachableEngine(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	script := func(stderr string) string {
		bin := filepath.Join(t.TempDir(), "docker")
		mustWrite(t, bin, []byte("#!/bin/sh\necho '"+stderr+"' >&2\nexit 1\n"))
		if err := os.Chmod(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		return bin
	}
	ctx := context.Background()
	down := script("Cannot connect to the Docker daemon at unix:///nonexistent. Is the docker daemon running?")
	if _, present, err := (DockerImages{Binary: down}).Labels(ctx, "api:latest"); present || !errors.Is(err, ErrEngineUnreachable) || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
		t.Fatalf("unreachable engine: present %v, err %v", present, err)
	}
	for _, msg := range []string{"Error response from daemon: No such image: api:latest", "Error: No such object: api:latest"} {
		if _, present, err := (DockerImages{Binary: script(msg)}).Labels(ctx, "api:latest"); present || err != nil {
			t.Errorf("%q: present %v, err %v", msg, present, err)
		}
	}
	// The real CLI, pointed at no engine, says the same (it never reaches
	// a daemon, so this needs none).
	if _, err := exec.LookPath("docker"); err == nil {
		t.Setenv("DOCKER_HOST", "unix:///nonexistent")
		t.Setenv("DOCKER_CONTEXT", "")
		if _, _, err := (DockerImages{}).Labels(ctx, "api:latest"); !errors.Is(err, ErrEngineUnreachable) {
			t.Errorf("docker CLI with DOCKER_HOST=unix:///nonexistent: %v", err)
		}
	}
	// Compiling with images then fails naming the service and the image.
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "claw-pod.yml"), []byte(fmt.Sprintf(imagePod, "api:latest")))
	_, err := Build(ctx, loadPod(t, dir), Options{Images: DockerImages{Binary: down}, Rand: zeroReader{}})
	if err == nil || !strings.Contains(err.Error(), "image api:latest") || !strings.Contains(err.Error(), `service "api"`) || !strings.Contains(err.Error(), "start the Docker engine") {
		t.Fatalf("compile with an unreachable engine: %v", err)
	}
}

// TestImageDescriptorProgress: claw says it reads a descriptor from an
// image only of an image that has one; of one without, it says so.
func TestImageDescriptorProgress(t *testing.T) {
	images := fakeImages{
		"baked": {labels: map[string]string{}, files: map[string]string{"/.claw-describe.json": imageDescriptor, "/docs/skill.md": "# baked\n"}},
		"model": {labels: map[string]string{}},
	}
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "claw-pod.yml"), []byte(fmt.Sprintf(imagePod, "baked")+"  model:\n    image: model\n"))
	var msgs []string
	_, err := Build(context.Background(), loadPod(t, dir), Options{Images: images, Rand: zeroReader{}, Progress: func(m string) { msgs = append(msgs, m) }})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(msgs, "\n")
	for _, want := range []string{
		"api: descriptor read from image baked (/.claw-describe.json)",
		"model: image model has no descriptor",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("progress lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "reading the descriptor of model") || strings.Contains(got, "descriptor of model from") {
		t.Errorf("progress claims a descriptor of the model's image:\n%s", got)
	}
}
