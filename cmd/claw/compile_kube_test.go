package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompileTargetKubernetes(t *testing.T) {
	dir := copyPod(t)
	h := newHarness()
	if code := h.run("compile", "-q", "--target", "kubernetes", "-f", filepath.Join(dir, "claw-pod.yml")); code != ExitOK {
		t.Fatalf("exit %d: %s", code, h.err.String())
	}
	for _, p := range []string{"k8s/kustomization.yaml", "k8s/namespace.yaml", "k8s/networkpolicy-default-deny.yaml", "k8s/secret-analyst-token.yaml", "compose.generated.yml"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if h.out.Len() != 0 {
		t.Errorf("-q printed %q", h.out.String())
	}

	out := filepath.Join(t.TempDir(), "manifests")
	h = newHarness()
	if code := h.run("compile", "--target", "kubernetes", "-o", out, "-f", filepath.Join(dir, "claw-pod.yml")); code != ExitOK {
		t.Fatalf("exit %d: %s", code, h.err.String())
	}
	for _, want := range []string{"manifests for namespace trading-desk in " + out, "clawgo/cllama:latest", "kubectl apply -k " + out} {
		if !strings.Contains(h.out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, h.out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, "deployment-cllama.yaml")); err != nil {
		t.Error(err)
	}
}

func TestCompileTargetUsage(t *testing.T) {
	dir := copyPod(t)
	for _, args := range [][]string{
		{"--target", "swarm"},
		{"-o", "k8s"},
	} {
		h := newHarness()
		if code := h.run(append([]string{"compile", "-f", filepath.Join(dir, "claw-pod.yml")}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, ExitUsage, h.err.String())
		}
	}
}
