package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	env := map[string]string{"CLAW_MODEL_SCRIPT": "env.yaml", "CLAW_MODEL_ADDR": "127.0.0.1:9"}
	getenv := func(k string) string { return env[k] }
	o, err := parse(nil, getenv, io.Discard)
	if err != nil || o.script != "env.yaml" || o.addr != "127.0.0.1:9" {
		t.Fatalf("env: %+v %v", o, err)
	}
	o, err = parse([]string{"--script", "s.json", "--addr", ":0", "--log-requests", "r.jsonl"}, getenv, io.Discard)
	if err != nil || o.script != "s.json" || o.addr != ":0" || o.logRequests != "r.jsonl" {
		t.Fatalf("flags: %+v %v", o, err)
	}
	o, err = parse(nil, func(string) string { return "" }, io.Discard)
	if err == nil {
		t.Fatal("no script accepted")
	}
	if o.addr != ":8080" {
		t.Fatalf("default addr %q", o.addr)
	}
	if _, err := parse([]string{"--script", "x", "extra"}, getenv, io.Discard); err == nil {
		t.Fatal("stray argument accepted")
	}
}

func TestMainRefusesBadScript(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("rules: []"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := Main([]string{"--script", p, "--addr", "127.0.0.1:0"}, func(string) string { return "" }, io.Discard); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}

// --version answers without a script, naming the program and its Go.
func TestVersion(t *testing.T) {
	out, err := exec.Command(os.Args[0], "-test.run=^TestVersionHelper$", "--", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "claw-model ") || !strings.Contains(string(out), "go1.") {
		t.Fatalf("%q", out)
	}
}

// TestVersionHelper is main, run by TestVersion in a child process.
func TestVersionHelper(t *testing.T) {
	for i, a := range os.Args {
		if a == "--" {
			os.Args = append([]string{"claw-model"}, os.Args[i+1:]...)
			main()
			os.Exit(0)
		}
	}
	t.Skip("run by TestVersion")
}
