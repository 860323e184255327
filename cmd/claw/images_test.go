package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeStore is an ImageStore: present images, and pull failures by image
// (an image absent and without a failure pulls).
type fakeStore struct {
	present map[string]bool
	broken  map[string]bool // Present cannot tell
	fail    map[string]string
	asked   []string
	pulled  []string
}

func (s *fakeStore) Present(_ context.Context, image string) (bool, error) {
	s.asked = append(s.asked, image)
	if s.broken[image] {
		return false, errors.New("engine says 404 page not found")
	}
	return s.present[image], nil
}

func (s *fakeStore) Pull(_ context.Context, image string) error {
	s.pulled = append(s.pulled, image)
	if reason, ok := s.fail[image]; ok {
		return errors.New(reason)
	}
	return nil
}

const denied = "pull access denied for clawgo/claw-model, repository does not exist or may require 'docker login'"

func TestEnsureImages(t *testing.T) {
	store := &fakeStore{
		present: map[string]bool{"clawgo/cllama:latest": true},
		broken:  map[string]bool{"odd:1": true},
		fail:    map[string]string{"clawgo/claw-model:latest": denied},
	}
	images := []serviceImage{
		{Service: "analyst", Image: "clawgo/example-openai-runner:latest"},
		{Service: "claw-model", Image: "clawgo/claw-model:latest"},
		{Service: "cllama", Image: "clawgo/cllama:latest"},
		{Service: "odd", Image: "odd:1"},
		{Service: "researcher", Image: "clawgo/example-openai-runner:latest"},
		{Service: "web", Image: "clawgo-test/web:1", Build: true},
	}
	var progress bytes.Buffer
	err := ensureImages(context.Background(), store, images, &progress)
	var missing *missingImagesError
	if !errors.As(err, &missing) || len(missing.Missing) != 1 || missing.Missing[0].Image != "clawgo/claw-model:latest" || missing.Missing[0].Reason != denied {
		t.Fatalf("got %v", err)
	}
	// One question per image; a built image is compose's to build.
	if want := []string{"clawgo/example-openai-runner:latest", "clawgo/claw-model:latest", "clawgo/cllama:latest", "odd:1"}; !slices.Equal(store.asked, want) {
		t.Errorf("asked %q, want %q", store.asked, want)
	}
	if want := []string{"clawgo/example-openai-runner:latest", "clawgo/claw-model:latest"}; !slices.Equal(store.pulled, want) {
		t.Errorf("pulled %q, want %q", store.pulled, want)
	}
	want := "claw: pulling clawgo/example-openai-runner:latest (analyst, researcher), which is not on this machine\n" +
		"claw: pulling clawgo/claw-model:latest (claw-model), which is not on this machine\n"
	if progress.String() != want {
		t.Errorf("progress %q, want %q", progress.String(), want)
	}
	if err := ensureImages(context.Background(), &fakeStore{present: map[string]bool{"a:1": true}}, []serviceImage{{Service: "a", Image: "a:1"}}, &progress); err != nil {
		t.Errorf("present images: %v", err)
	}
}

// TestMissingImagesError: one clear message naming each service and image
// and how to get it.
func TestMissingImagesError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		missing []missingImage
		want    []string
	}{
		{"example image", []missingImage{{Services: []string{"claw-model"}, Image: "clawgo/claw-model:latest", Reason: denied}},
			[]string{"service claw-model runs image clawgo/claw-model:latest, which is not on this machine and could not be pulled (" + denied + "); ",
				"the clawgo repository builds the example pod's images on this machine, not on a registry: run `make images` there, then `claw up` again"}},
		{"example image under another name", []missingImage{{Services: []string{"claw-model"}, Image: "registry.example.com:5000/claw/claw-model:v1", Reason: "no such host"}},
			[]string{"run `PREFIX=registry.example.com:5000/claw TAG=v1 scripts/images.sh claw-model` there"}},
		{"example images under another tag", []missingImage{
			{Services: []string{"analyst"}, Image: "clawgo/example-openai-runner:dev", Reason: "r1"},
			{Services: []string{"claw-model"}, Image: "clawgo/claw-model:dev", Reason: "r2"},
		}, []string{"\nthe clawgo repository builds the example pod's images on this machine, not on a registry: run `PREFIX=clawgo TAG=dev scripts/images.sh example-openai-runner claw-model` there, then `claw up` again"}},
		{"any image", []missingImage{{Services: []string{"api", "worker"}, Image: "acme/api:2", Reason: "manifest unknown"}},
			[]string{"service api, worker runs image acme/api:2", "(manifest unknown)", "pull acme/api:2 once its registry is reachable (`docker pull acme/api:2`), build it under that name, or give api and worker a build section (`claw up` builds a missing image, `claw up --build` rebuilds it)"}},
		{"several", []missingImage{
			{Services: []string{"analyst", "researcher"}, Image: "clawgo/example-openai-runner:latest", Reason: "r1"},
			{Services: []string{"claw-model"}, Image: "clawgo/claw-model:latest", Reason: "r2"},
		}, []string{"2 images of the pod are not on this machine and could not be pulled:\n  analyst, researcher: clawgo/example-openai-runner:latest (r1)\n  claw-model: clawgo/claw-model:latest (r2)\nthe clawgo repository builds the example pod's images on this machine, not on a registry: run `make images` there"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&missingImagesError{Missing: tc.missing}).Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q\nlacks %q", got, w)
				}
			}
			if strings.Count(got, "scripts/images.sh")+strings.Count(got, "make images") > 1 || strings.Contains(got, "docker-compose") {
				t.Errorf("%q", got)
			}
		})
	}
}

// TestExampleImagesMatchImagesScript: claw knows the images
// scripts/images.sh builds.
func TestExampleImagesMatchImagesScript(t *testing.T) {
	data, err := os.ReadFile("../../scripts/images.sh")
	if err != nil {
		t.Fatal(err)
	}
	var built []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:want \S+ && )?image ([a-z0-9-]+) `).FindAllStringSubmatch(string(data), -1) {
		built = append(built, m[1])
	}
	if !slices.Equal(built, exampleImages) {
		t.Errorf("scripts/images.sh builds %q; claw knows %q", built, exampleImages)
	}
}

func TestComposeImages(t *testing.T) {
	got, err := composeImages([]byte("services:\n  web:\n    build:\n      context: ./web\n    image: acme/web:1\n  api:\n    image: acme/api:2\n  bare:\n    build: ./bare\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []serviceImage{{Service: "api", Image: "acme/api:2"}, {Service: "web", Image: "acme/web:1", Build: true}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestBuildNoteFilter: docker-compose 1.x's note on an image it built,
// which names its own commands, is said in claw's words, however compose's
// output arrives; every other line passes untouched and at once.
func TestBuildNoteFilter(t *testing.T) {
	note := "Image for service web was built because it did not already exist. To rebuild this image you must use `docker-compose build` or `docker-compose up --build`.\n"
	in := "Building web\n" + "\x1b[33mWARNING\x1b[0m: " + note + "Creating pod_web_1 ... \rCreating pod_web_1 ... done\n" + note + "2"
	want := "Building web\n" +
		"claw: compose built the image of service web, which was not on this machine; `claw up --build` rebuilds it\n" +
		"Creating pod_web_1 ... \rCreating pod_web_1 ... done\n" +
		"claw: compose built the image of service web, which was not on this machine; `claw up --build` rebuilds it\n" + "2"
	for _, size := range []int{1, 3, 7, 64, len(in)} {
		var out bytes.Buffer
		f := &buildNoteFilter{w: &out}
		for b := []byte(in); len(b) > 0; {
			n := min(size, len(b))
			if _, err := f.Write(b[:n]); err != nil {
				t.Fatal(err)
			}
			b = b[n:]
		}
		if err := f.flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("writes of %d: got\n%q\nwant\n%q", size, out.String(), want)
		}
	}
	// A partial line that cannot be the note is not held.
	var out bytes.Buffer
	f := &buildNoteFilter{w: &out}
	_, _ = f.Write([]byte("Creating pod_web_1 ... "))
	if out.String() != "Creating pod_web_1 ... " {
		t.Errorf("held %q", out.String())
	}
}

// TestUpMissingImage: `claw up` of a pod whose image is not on this
// machine and cannot be pulled says so in one error naming the service,
// the image and how to get it, and runs no compose.
func TestUpMissingImage(t *testing.T) {
	dir := copyPod(t)
	compose, record := fakeCompose(t, "echo 'Pulling analyst (analyst:latest)...' >&2; exit 1")
	docker, path := fakeDockerCLI(t)
	if err := os.WriteFile(filepath.Join(docker, "absent"), []byte("analyst:latest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"CLAW_COMPOSE=" + compose, "DOCKER_HOST=" + fakeDockerd(t, nil), "PATH=" + path}
	r := runClawBinary(t, dir, env, "up", "-d")
	want := "claw: pulling analyst:latest (analyst), which is not on this machine\n" +
		"claw: service analyst runs image analyst:latest, which is not on this machine and could not be pulled (pull access denied for analyst, repository does not exist or may require 'docker login'); " +
		"pull analyst:latest once its registry is reachable (`docker pull analyst:latest`), build it under that name, or give analyst a build section (`claw up` builds a missing image, `claw up --build` rebuilds it)\n"
	if r.code != ExitFailure || !strings.HasSuffix(r.stderr, want) {
		t.Fatalf("exit %d, stderr:\n%s\nwant it to end with:\n%s", r.code, r.stderr, want)
	}
	if data, err := os.ReadFile(record); err == nil {
		t.Errorf("compose ran: %s", data)
	}
}

// TestUpMissingImageDocker runs `claw up` on the Docker engine and Compose
// of this machine with an image that exists nowhere: one error from claw,
// nothing of compose's.
func TestUpMissingImageDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("uses Docker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := exec.LookPath("docker"); err != nil || exec.CommandContext(ctx, "docker", "info").Run() != nil {
		t.Skip("no Docker engine")
	}
	if _, err := exec.LookPath("docker-compose"); err != nil && exec.CommandContext(ctx, "docker", "compose", "version").Run() != nil {
		t.Skip("neither docker-compose nor `docker compose` is available")
	}
	buf := make([]byte, 4)
	_, _ = rand.Read(buf)
	suffix := hex.EncodeToString(buf)
	image := "clawgo-test/absent-" + suffix + ":nope"
	dir := t.TempDir()
	pod := "x-claw:\n  pod: missing-" + suffix + "\nservices:\n  web:\n    image: " + image + "\n"
	if err := os.WriteFile(filepath.Join(dir, "claw-pod.yml"), []byte(pod), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runClawBinary(t, dir, nil, "down") })
	r := runClawBinary(t, dir, []string{"CLAW_COMPOSE="}, "up", "-d")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "claw: service web runs image "+image+", which is not on this machine and could not be pulled (") ||
		!strings.Contains(r.stderr, "`docker pull "+image+"`") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, leak := range []string{"docker-compose", "Pulling web", "Creating network", "Continue with", "Traceback"} {
		if strings.Contains(r.stderr, leak) {
			t.Errorf("compose's output leaked (%q):\n%s", leak, r.stderr)
		}
	}
}

// TestUpBuildsMissingImageDocker: compose builds a missing image of a
// service with a build section, and what docker-compose 1.x says of it
// names claw's command, not compose's.
func TestUpBuildsMissingImageDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("uses Docker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := exec.LookPath("docker"); err != nil || exec.CommandContext(ctx, "docker", "info").Run() != nil {
		t.Skip("no Docker engine")
	}
	if _, err := exec.LookPath("docker-compose"); err != nil && exec.CommandContext(ctx, "docker", "compose", "version").Run() != nil {
		t.Skip("neither docker-compose nor `docker compose` is available")
	}
	buf := make([]byte, 4)
	_, _ = rand.Read(buf)
	suffix := hex.EncodeToString(buf)
	image := "clawgo-test/built-" + suffix + ":nope"
	dir := t.TempDir()
	for name, data := range map[string]string{
		"claw-pod.yml":   "x-claw:\n  pod: built-" + suffix + "\nservices:\n  web:\n    image: " + image + "\n    build: ./web\n",
		"web/Dockerfile": "FROM scratch\nCOPY note /note\n",
		"web/note":       "nothing runs here\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		runClawBinary(t, dir, nil, "down")
		_ = exec.Command("docker", "rmi", "-f", image).Run()
	})
	// The image has nothing to run: the container does not start, but
	// the image is built first.
	r := runClawBinary(t, dir, []string{"CLAW_COMPOSE="}, "up", "-d")
	if exec.Command("docker", "image", "inspect", image).Run() != nil {
		t.Fatalf("compose did not build %s: exit %d\n%s", image, r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "docker-compose build") || strings.Contains(r.stderr, "was built because") {
		t.Errorf("compose's note leaked:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "claw: docker-compose up") && !strings.Contains(r.stderr, "claw: compose built the image of service web, which was not on this machine; `claw up --build` rebuilds it\n") {
		t.Errorf("docker-compose 1.x built the image without claw's note:\n%s", r.stderr)
	}
}
