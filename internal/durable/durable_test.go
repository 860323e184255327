package durable

import (
	"os"
	"path/filepath"
	"testing"
)

// The file holds the new content with the asked permissions, no temporary
// file is left, and a failure leaves the old content in place.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(path, ".state-", 0o600, []byte(`{"a":`), []byte(`1}`)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != `{"a":1}` {
		t.Fatalf("%q %v", got, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".state-*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	// A target that cannot be replaced (a directory is in the way): the
	// temporary file goes, the error comes back.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Replace(blocked, ".blocked-", 0o600, []byte("new")); err == nil {
		t.Fatal("replacing a non-empty directory succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".blocked-*")); len(left) != 0 {
		t.Fatalf("temporary files left after a failure: %v", left)
	}
	if got, _ := os.ReadFile(path); string(got) != `{"a":1}` {
		t.Fatalf("other file changed: %q", got)
	}
}
