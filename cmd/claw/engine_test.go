package main

import (
	"bytes"
	"context"
	"errors"
	"io"
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
	t.Setenv("CLAW_COMPOSE", "")
	t.Setenv("DOCKER_HOST", fakeDockerd(t, nil))
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

// TestComposeEngineFromEnv: CLAW_COMPOSE names the command (a program and
// its leading arguments), and a missing one is an error that names it.
func TestComposeEngineFromEnv(t *testing.T) {
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\" >> " + record + "; done\n"
	if err := os.WriteFile(filepath.Join(bin, "compose-v2"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("CLAW_COMPOSE", "compose-v2 --ansi never")
	t.Setenv("DOCKER_HOST", fakeDockerd(t, nil))
	eng, err := NewComposeEngine(context.Background(), EngineConfig{Dir: t.TempDir(), File: "compose.generated.yml", Project: "desk", IO: IOStreams{Out: io.Discard, ErrOut: io.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Compose(context.Background(), "ps"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(record)
	if got, want := strings.Fields(string(data)), []string{"--ansi", "never", "-p", "desk", "-f", "compose.generated.yml", "ps"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("ran %q, want %q", got, want)
	}
	t.Setenv("CLAW_COMPOSE", "no-such-compose")
	if _, err := NewComposeEngine(context.Background(), EngineConfig{}); err == nil || !strings.Contains(err.Error(), "CLAW_COMPOSE") {
		t.Fatalf("missing CLAW_COMPOSE command: got %v", err)
	}
}

func TestComposeEngineMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CLAW_COMPOSE", "")
	if _, err := NewComposeEngine(context.Background(), EngineConfig{}); !errors.Is(err, ErrNoCompose) {
		t.Fatalf("got %v", err)
	}
}

// TestPoolWatch: the engine's address-pool exhaustion is noticed however
// compose's stderr is split into writes, and the output passes through.
func TestPoolWatch(t *testing.T) {
	msg := "ERROR: could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network\n"
	for split := 0; split <= len(msg); split += 7 {
		var out strings.Builder
		w := &poolWatch{w: &out}
		_, _ = w.Write([]byte("Creating network \"pod_claw-agent-a\"\n" + msg[:split]))
		_, _ = w.Write([]byte(msg[split:]))
		if !w.seen {
			t.Fatalf("split at %d: exhaustion not noticed", split)
		}
		if !strings.HasSuffix(out.String(), msg) {
			t.Fatalf("split at %d: output not passed through: %q", split, out.String())
		}
	}
	w := &poolWatch{w: io.Discard}
	_, _ = w.Write([]byte("Creating network \"pod_default\" with the default driver\n"))
	if w.seen {
		t.Fatal("an ordinary line was taken for exhaustion")
	}
}

// TestForceFilter: docker-compose 1.29's bare "2" before exit status 2 is
// dropped; a "2" that is output like any other is kept.
func TestForceFilter(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		code   int
		want   string
		forced bool
	}{
		{[]string{"Killing pod_a_1 ... done\n", "2\n"}, 2, "Killing pod_a_1 ... done\n", true},
		{[]string{"Killing pod_a_1 ... done\n2\n"}, 2, "Killing pod_a_1 ... done\n", true},
		{[]string{"2\n", "more\n"}, 2, "2\nmore\n", false},
		{[]string{"count: ", "2\n"}, 2, "count: 2\n", false},
		{[]string{"x\n", "2\n"}, 1, "x\n2\n", false},
		{[]string{"x\n", "12\n"}, 2, "x\n12\n", false},
	} {
		var out strings.Builder
		f := &forceFilter{w: &out}
		for _, w := range tc.writes {
			if n, err := f.Write([]byte(w)); err != nil || n != len(w) {
				t.Fatalf("write %q: %d, %v", w, n, err)
			}
		}
		if forced := f.finish(tc.code); forced != tc.forced || out.String() != tc.want {
			t.Errorf("%q exit %d: forced %v, output %q; want %v, %q", tc.writes, tc.code, forced, out.String(), tc.forced, tc.want)
		}
	}
}
