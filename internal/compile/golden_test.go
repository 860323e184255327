package compile

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/pod"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/<case>/want")

// zeroReader makes tokens deterministic in tests (they are masked anyway).
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

var tokenPattern = regexp.MustCompile(`([A-Za-z0-9_-]+):[0-9a-f]{48}`)

func maskTokens(b []byte) []byte { return tokenPattern.ReplaceAll(b, []byte("$1:<TOKEN>")) }

// TestGolden compiles every testdata/<case>/pod and compares the whole
// generated tree with testdata/<case>/want (tokens masked). A case whose
// compile must fail holds want/error.txt instead. An optional
// testdata/<case>/env holds process environment lines.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "*", "pod"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, podDir := range cases {
		caseDir := filepath.Dir(podDir)
		name := filepath.Base(caseDir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := compileCase(t, caseDir)
			want := filepath.Join(caseDir, "want")
			if *update {
				if err := os.RemoveAll(want); err != nil {
					t.Fatal(err)
				}
				for p, data := range got {
					full := filepath.Join(want, filepath.FromSlash(p))
					if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(full, data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			wantFiles := readTree(t, want, nil)
			for _, p := range sortedKeys(got) {
				w, ok := wantFiles[p]
				if !ok {
					t.Errorf("unexpected output file %s:\n%s", p, got[p])
					continue
				}
				if !bytes.Equal(w, got[p]) {
					t.Errorf("%s differs from the golden file (run go test ./internal/compile -update to accept)\n--- got\n%s\n--- want\n%s", p, got[p], w)
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

// compileCase copies the case's pod to a temporary directory, compiles and
// writes it, and returns the generated files (or error.txt).
func compileCase(t *testing.T, caseDir string) map[string][]byte {
	t.Helper()
	tmp := t.TempDir()
	inputs := readTree(t, filepath.Join(caseDir, "pod"), nil)
	for p, data := range inputs {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	if data, err := os.ReadFile(filepath.Join(caseDir, "env")); err == nil {
		env = strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	ctx := context.Background()
	// As claw compile: a pod Load returns with its services' problems is
	// compiled still, for Build to report them with its own.
	p, err := pod.Load(ctx, pod.LoadOptions{File: filepath.Join(tmp, "claw-pod.yml"), Env: env})
	var res *Result
	if p != nil {
		res, err = Build(ctx, p, Options{Rand: zeroReader{}})
	}
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), tmp+string(filepath.Separator), "")
		msg = strings.ReplaceAll(msg, tmp, ".")
		return map[string][]byte{"error.txt": []byte(msg + "\n")}
	}
	if err := res.Output.Write(tmp); err != nil {
		t.Fatal(err)
	}
	out := readTree(t, tmp, inputs)
	if len(res.Warnings) > 0 {
		var w strings.Builder
		for _, s := range res.Warnings {
			w.WriteString(strings.ReplaceAll(s, tmp+string(filepath.Separator), "") + "\n")
		}
		out["warnings.txt"] = []byte(w.String())
	}
	out["summary.txt"] = []byte(Summary(res))
	for p := range out {
		out[p] = maskTokens(out[p])
	}
	return out
}

// readTree returns every regular file under root by slash path, skipping
// those in skip.
func readTree(t *testing.T, root string, skip map[string][]byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if _, ok := skip[rel]; ok {
			return nil
		}
		data, err := os.ReadFile(p)
		files[rel] = data
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

var _ = sort.Strings
