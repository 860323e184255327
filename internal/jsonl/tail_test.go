package jsonl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// CutTornTail leaves a file that ends with a whole line (or is empty) as
// it is, and cuts anything after the last newline, however long, or the
// whole file when it holds no newline.
func TestCutTornTail(t *testing.T) {
	long := strings.Repeat("x", 3*tailChunk+17) // the newline is chunks back
	for _, c := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"whole", "{\"a\":1}\n{\"b\":2}\n", "{\"a\":1}\n{\"b\":2}\n"},
		{"torn", "{\"a\":1}\n{\"b\":", "{\"a\":1}\n"},
		{"torn long", "{\"a\":1}\n" + long, "{\"a\":1}\n"},
		{"whole long", long + "\n", long + "\n"},
		{"no newline", "{\"a\":", ""},
		{"only long", long, ""},
		{"blank tail", "{\"a\":1}\n  ", "{\"a\":1}\n"},
		{"one newline", "\n", "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			if err := os.WriteFile(path, []byte(c.in), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cut, err := CutTornTail(f)
			if err != nil {
				t.Fatal(err)
			}
			want := Cut{Path: path, Offset: int64(len(c.want)), Bytes: int64(len(c.in) - len(c.want))}
			if cut != want {
				t.Fatalf("cut %+v, want %+v", cut, want)
			}
			// The next append starts where the cut ended.
			if _, err := f.WriteString("{\"next\":1}\n"); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want+"{\"next\":1}\n" {
				t.Fatalf("file after the cut and an append: %.80q", got)
			}
		})
	}
}

func TestCutString(t *testing.T) {
	c := Cut{Path: "h/alice/history.jsonl", Offset: 1200, Bytes: 34}
	if got, want := c.String(), "h/alice/history.jsonl: cut a partial last line (34 bytes at offset 1200)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// failingFile fails Truncate.
type failingFile struct{ *os.File }

func (failingFile) Truncate(int64) error { return syscall.EIO }

// A file that cannot be cut is reported, and left as it was.
func TestCutTornTailTruncateFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte("{}\n{"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := CutTornTail(failingFile{f}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("err %v, want EIO", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{}\n{" {
		t.Fatalf("file changed: %q", got)
	}
}
