package pod

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writePod(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, DefaultFile)
}

func TestLoadInterpolationAndPrecedence(t *testing.T) {
	file := writePod(t, map[string]string{
		".env": "POD=from-dotenv\nTOKEN=dotenv-token\nCOUNT=3\n",
		DefaultFile: `x-claw:
  pod: ${POD}
services:
  api:
    image: api:${TAG:-latest}
    environment:
      TOKEN: ${TOKEN}
  worker:
    image: w
    x-claw:
      cllama: passthrough
      count: ${COUNT}
  extra:
    image: e
    profiles: [extra]
`})
	p, err := Load(context.Background(), LoadOptions{File: file, Env: []string{"TOKEN=process-token"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "from-dotenv" {
		t.Errorf("pod name %q", p.Name)
	}
	api := p.Services["api"].Compose
	if api.Image != "api:latest" || *api.Environment["TOKEN"] != "process-token" {
		t.Errorf("interpolation: image %q token %q (process env must win over .env)", api.Image, *api.Environment["TOKEN"])
	}
	if p.Services["worker"].Claw.Count != 3 || !p.Services["worker"].IsAgent() {
		t.Errorf("worker: %+v", p.Services["worker"].Claw)
	}
	if _, ok := p.Services["extra"]; ok {
		t.Error("profiled service enabled without its profile")
	}
	if got := len(p.Agents()); got != 1 {
		t.Errorf("%d agents", got)
	}
	p, err = Load(context.Background(), LoadOptions{File: file, Env: []string{"COMPOSE_PROFILES=extra"}})
	if err != nil || p.Services["extra"] == nil {
		t.Fatalf("COMPOSE_PROFILES: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(context.Background(), LoadOptions{File: filepath.Join(t.TempDir(), "nope.yml")})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "file not found") {
		t.Errorf("missing file: %v", err)
	}
	file := writePod(t, map[string]string{DefaultFile: "services:\n  a:\n    image: x\n    ports: {bad: 1}\n"})
	_, err = Load(context.Background(), LoadOptions{File: file})
	var e *Error
	if !errors.As(err, &e) || e.File != file || e.Fix == "" {
		t.Errorf("compose error: %v", err)
	}
	file = writePod(t, map[string]string{DefaultFile: "services:\n  a:\n    image: x\n    x-claw:\n      cllama: 7\n"})
	_, err = Load(context.Background(), LoadOptions{File: file})
	if !errors.As(err, &e) || e.Service != "a" || e.Key != "x-claw.cllama" {
		t.Errorf("x-claw error: %v", err)
	}
}

func TestLoadWithoutImage(t *testing.T) {
	file := writePod(t, map[string]string{DefaultFile: "services:\n  a:\n    x-claw:\n      cllama: passthrough\n"})
	p, err := Load(context.Background(), LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Unrunnable) != 1 || p.Unrunnable[0] != "a" || len(p.Warnings) != 1 {
		t.Fatalf("unrunnable %v warnings %v", p.Unrunnable, p.Warnings)
	}
}

// Two services' problems are reported in one run, in service order.
func TestLoadReportsEveryServicesProblem(t *testing.T) {
	file := writePod(t, map[string]string{DefaultFile: `services:
  zed:
    image: z
    x-claw: {cllama: passthrough, count: many}
  alpha:
    image: a
    x-claw: {cllama: passthrough, tools: [{service: zed, alow: all}]}
`})
	_, err := Load(context.Background(), LoadOptions{File: file})
	var many Errors
	if !errors.As(err, &many) || len(many) != 2 {
		t.Fatalf("want both services' problems, got %v", err)
	}
	msg := err.Error()
	if i, j := strings.Index(msg, `service "alpha"`), strings.Index(msg, `service "zed"`); i < 0 || j < 0 || i > j {
		t.Fatalf("not in service order:\n%s", msg)
	}
}

// When only services' x-claw blocks have problems, the pod comes back
// with them, its services at fault Invalid, for compile to add the
// problems of the others; a problem of the pod's own block leaves no pod.
func TestLoadReturnsThePodWithItsServicesProblems(t *testing.T) {
	file := writePod(t, map[string]string{DefaultFile: `services:
  good:
    image: g
    x-claw: {cllama: passthrough}
  bad:
    image: b
    x-claw: {agent: a.md, tools: [good]}
`})
	p, err := Load(context.Background(), LoadOptions{File: file})
	if err == nil || p == nil || len(p.Problems) != 1 || p.Problems.Err().Error() != err.Error() {
		t.Fatalf("got pod %v, error %v; want the pod and its problem", p, err)
	}
	if bad := p.Services["bad"]; !bad.Invalid || bad.Claw != nil || bad.IsAgent() {
		t.Errorf("bad: %+v", bad)
	}
	if good := p.Services["good"]; good.Invalid || !good.IsAgent() {
		t.Errorf("good: %+v", good)
	}
	file = writePod(t, map[string]string{DefaultFile: `x-claw: {tols-defaults: [good]}
services:
  good:
    image: g
    x-claw: {cllama: passthrough}
  bad:
    image: b
    x-claw: {agent: a.md, tools: [good]}
`})
	p, err = Load(context.Background(), LoadOptions{File: file})
	var many Errors
	if p != nil || !errors.As(err, &many) || len(many) != 2 {
		t.Fatalf("got pod %v, error %v; want no pod and both problems", p, err)
	}
}
