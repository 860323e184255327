package kube

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/<case>/want")

// goldenCases are the pods rendered against goldens: the compiler's
// trading desk and perimeter cases, and this package's own.
var goldenCases = map[string]string{
	"trading-desk":     "../compile/testdata/trading-desk/pod",
	"perimeter":        "../compile/testdata/perimeter/pod",
	"perimeter-agents": "../compile/testdata/perimeter-agents/pod",
	"native-tools":     "../compile/testdata/native-tools/pod",
	"features":         "testdata/features/pod",
}

// zeroReader makes agent tokens deterministic.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// compiled is a golden case compiled and rendered.
type compiled struct {
	res *compile.Result
	m   *Manifests
}

// compileCase copies a pod to a temporary directory, compiles it with
// zero tokens and renders it.
func compileCase(t *testing.T, podDir string) compiled {
	t.Helper()
	tmp := t.TempDir()
	// What a run of the pod left behind (make demo, claw up in the
	// example's directory) is not its source: leave it out.
	left := map[string]bool{compile.RuntimeDir: true, compile.AuthDir: true, compile.GeneratedFile: true}
	err := filepath.WalkDir(podDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(podDir, p)
		if left[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		full := filepath.Join(tmp, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		return os.WriteFile(full, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	if data, err := os.ReadFile(filepath.Join(filepath.Dir(podDir), "env")); err == nil {
		env = strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	ctx := context.Background()
	p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(tmp, "claw-pod.yml"), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compile.Build(ctx, p, compile.Options{Rand: zeroReader{}, KeepTokens: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Render(res)
	if err != nil {
		t.Fatal(err)
	}
	// Errors and warnings name the pod file as given: here, in tmp.
	for i, w := range m.Warnings {
		m.Warnings[i] = strings.ReplaceAll(w, tmp+string(filepath.Separator), "")
	}
	for i, f := range m.Files {
		m.Files[i].Data = bytes.ReplaceAll(f.Data, []byte(tmp+string(filepath.Separator)), nil)
	}
	return compiled{res: res, m: m}
}

// TestGolden renders every case and compares the output directory, the
// summary and the warnings with testdata/<case>/want.
func TestGolden(t *testing.T) {
	for name, podDir := range goldenCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := compileCase(t, podDir)
			got := map[string][]byte{}
			for _, f := range c.m.Files {
				got[f.Path] = f.Data
			}
			got["summary.txt"] = []byte(c.m.Summary("k8s/"))
			want := filepath.Join("testdata", name, "want")
			if *update {
				if err := os.RemoveAll(want); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(want, 0o755); err != nil {
					t.Fatal(err)
				}
				for p, data := range got {
					if err := os.WriteFile(filepath.Join(want, p), data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			entries, err := os.ReadDir(want)
			if err != nil {
				t.Fatal(err)
			}
			wantFiles := map[string][]byte{}
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(want, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				wantFiles[e.Name()] = data
			}
			for _, p := range sortedKeys(got) {
				w, ok := wantFiles[p]
				if !ok {
					t.Errorf("unexpected output file %s:\n%s", p, got[p])
					continue
				}
				if !bytes.Equal(w, got[p]) {
					t.Errorf("%s differs from the golden file (run go test ./internal/kube -update to accept)\n--- got\n%s\n--- want\n%s", p, got[p], w)
				}
			}
			for _, p := range sortedKeys(wantFiles) {
				if _, ok := got[p]; !ok {
					t.Errorf("missing output file %s", p)
				}
			}
		})
	}
}

// TestRenderRefuses checks the pods Kubernetes cannot run as written.
func TestRenderRefuses(t *testing.T) {
	for _, tc := range []struct{ name, pod, key, want string }{
		{"pod name", "x-claw: {pod: Trading_Desk}\nservices:\n  api: {image: api}\n", "x-claw.pod", "namespace name"},
		{"service name", "x-claw: {pod: desk}\nservices:\n  trading_api: {image: api}\n", "services.trading_api", "Kubernetes name"},
		{"replica name", "x-claw: {pod: desk}\nservices:\n  \"1bot\": {image: r, x-claw: {cllama: passthrough, count: 2}}\n", "services.1bot", "Kubernetes name"},
		{"no image", "x-claw: {pod: desk}\nservices:\n  api: {expose: ['80']}\n", "image", "neither image nor build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "claw-pod.yml"), []byte(tc.pod), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(dir, "claw-pod.yml")})
			if err != nil {
				t.Fatal(err)
			}
			res, err := compile.Build(ctx, p, compile.Options{Rand: zeroReader{}, KeepTokens: map[string]string{}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = Render(res)
			var pe *pod.Error
			if !errors.As(err, &pe) || pe.Key != tc.key || !strings.Contains(pe.Problem, tc.want) || pe.Fix == "" {
				t.Fatalf("got %v, want a pod error at %s saying %q", err, tc.key, tc.want)
			}
		})
	}
}
