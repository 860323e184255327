package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestComposeEngineFallsBackToDockerCompose puts a fake docker-compose
// (and no docker) on PATH and checks what the engine runs and where.
func TestComposeEngineFallsBackToDockerCompose(t *testing.T) {
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "args")
	script := "#!/bin/sh\necho \"$PWD\" > " + record + "\nfor a in \"$@\"; do echo \"$a\" >> " + record + "; done\necho composed\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-compose"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	podDir := t.TempDir()
	var out bytes.Buffer
	eng, err := NewComposeEngine(context.Background(), EngineConfig{Dir: podDir, File: "compose.generated.yml", Project: "desk", IO: IOStreams{Out: &out, ErrOut: &out}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Compose(context.Background(), "up", "-d"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []string{podDir, "-p", "desk", "-f", "compose.generated.yml", "up", "-d"}
	if strings.Join(lines, " ") != strings.Join(want, " ") {
		t.Errorf("ran %q, want %q", lines, want)
	}
	if out.String() != "composed\n" {
		t.Errorf("output %q", out.String())
	}
}

func TestComposeEngineMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := NewComposeEngine(context.Background(), EngineConfig{}); !errors.Is(err, ErrNoCompose) {
		t.Fatalf("got %v", err)
	}
}
