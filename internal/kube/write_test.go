package kube

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/yaml"
)

// TestKustomizeBuilds runs `kubectl kustomize` (offline: it reads the
// directory only) on every case's output and decodes what it prints.
func TestKustomizeBuilds(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed; skipping the kustomize build of the rendered directories")
	}
	for name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := decodeCase(t, name)
			dir := t.TempDir()
			if err := d.c.m.Write(dir); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, kubectl, "kustomize", dir)
			// No cluster is involved; keep kubectl away from any config.
			cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "no-kubeconfig"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("kubectl kustomize: %v: %s", err, stderr.String())
			}
			dec := strictDecoder(scheme(t))
			r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
			n := 0
			for {
				doc, err := r.Read()
				if err != nil {
					break
				}
				if len(bytes.TrimSpace(doc)) == 0 {
					continue
				}
				if _, _, err := dec.Decode(doc, nil, nil); err != nil {
					t.Fatalf("kustomize output does not decode strictly: %v\n%s", err, doc)
				}
				n++
			}
			if n != len(d.objects) {
				t.Fatalf("kustomize built %d objects, want %d", n, len(d.objects))
			}
		})
	}
}

// TestWrite writes a rendering, rewrites it unchanged, then writes a
// smaller one: stale rendered files go, other files stay, Secrets are 0600.
func TestWrite(t *testing.T) {
	c := compileCase(t, goldenCases["perimeter-agents"])
	dir := filepath.Join(t.TempDir(), "k8s")
	if err := c.m.Write(dir); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(dir, "patch.yaml")
	if err := os.WriteFile(mine, []byte("# the operator's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range c.m.Files {
		st, err := os.Stat(filepath.Join(dir, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(modePublic)
		if strings.HasPrefix(f.Path, "secret-") {
			want = modeSecret
		}
		if st.Mode().Perm() != want || f.Mode != want {
			t.Errorf("%s: mode %v (rendered %v), want %v", f.Path, st.Mode().Perm(), f.Mode, want)
		}
	}
	old := time.Now().Add(-time.Hour)
	ns := filepath.Join(dir, "namespace.yaml")
	if err := os.Chtimes(ns, old, old); err != nil {
		t.Fatal(err)
	}
	if err := c.m.Write(dir); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(ns); !st.ModTime().Equal(old) {
		t.Errorf("an unchanged file was rewritten")
	}

	smaller := *c.m
	smaller.Files = nil
	for _, f := range c.m.Files {
		if !strings.Contains(f.Path, "worker-1") {
			smaller.Files = append(smaller.Files, f)
		}
	}
	if err := smaller.Write(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if strings.Contains(e.Name(), "worker-1") {
			t.Errorf("stale %s kept", e.Name())
		}
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the operator's file went: %v", err)
	}
	if len(names) != len(smaller.Files)+1 {
		t.Errorf("directory holds %v, want the %d rendered files and patch.yaml", names, len(smaller.Files))
	}
}
