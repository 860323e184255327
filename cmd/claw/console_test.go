package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/compile"
)

// claw console prints the URL where the host publishes cllama's admin
// listener, and where the operator token is.
func TestConsolePrintsTheURL(t *testing.T) {
	dir := copyPod(t)
	h := newHarness()
	if code := h.run("compile", "-q", "-f", filepath.Join(dir, "claw-pod.yml")); code != ExitOK {
		t.Fatalf("compile: %d %s", code, h.err.String())
	}
	if _, err := os.Stat(filepath.Join(dir, compile.OperatorTokenFile)); err != nil {
		t.Fatalf("no operator token: %v", err)
	}
	h.out.Reset()
	h.engine.containers = []Container{{Service: compile.CllamaService, State: "running",
		Ports: []Port{{Target: fmt.Sprintf("%d/tcp", compile.AdminPort), Published: "127.0.0.1:49321"}}}}
	if code := h.run("console", "-f", filepath.Join(dir, "claw-pod.yml")); code != ExitOK {
		t.Fatalf("console: %d %s", code, h.err.String())
	}
	if got := strings.TrimSpace(h.out.String()); got != "http://127.0.0.1:49321/" {
		t.Fatalf("printed %q", got)
	}
	if !strings.Contains(h.err.String(), "operator-token") {
		t.Fatalf("stderr %q", h.err.String())
	}
	// A pod that is not running says so.
	h.engine.containers = nil
	if code := h.run("console", "-f", filepath.Join(dir, "claw-pod.yml")); code == ExitOK {
		t.Fatal("console of a pod that is not running succeeded")
	}
}
