package owners

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/clawdapus/clawgo/internal/faulttest"
	"github.com/clawdapus/clawgo/internal/jsonl"
)

var (
	alice = Owner{Agent: "alice", Provider: "openai"}
	bob   = Owner{Agent: "bob", Provider: "openrouter"}
)

func open(t *testing.T, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func record(t *testing.T, s *Store, id string, o Owner) {
	t.Helper()
	if err := s.Record(id, o); err != nil {
		t.Fatal(err)
	}
}

func wantOwner(t *testing.T, s *Store, id string, want Owner) {
	t.Helper()
	got, ok := s.Owner(id)
	if !ok || got != want {
		t.Errorf("Owner(%q) = %+v, %v; want %+v", id, got, ok, want)
	}
}

func wantUnknown(t *testing.T, s *Store, id string) {
	t.Helper()
	if got, ok := s.Owner(id); ok {
		t.Errorf("Owner(%q) = %+v; want unknown", id, got)
	}
}

// logLines is the log's lines, the last one even without its newline.
func logLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestMemory(t *testing.T) {
	s := open(t, Options{})
	record(t, s, "resp_a", alice)
	record(t, s, "resp_b", bob)
	wantOwner(t, s, "resp_a", alice)
	wantOwner(t, s, "resp_b", bob)
	wantUnknown(t, s, "resp_c")
	if err := s.Forget("resp_a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget("resp_never"); err != nil {
		t.Fatal(err)
	}
	wantUnknown(t, s, "resp_a")
	if s.Len() != 1 {
		t.Errorf("Len = %d, want 1", s.Len())
	}
	for _, id := range []string{"", strings.Repeat("x", MaxIDBytes+1)} {
		if err := s.Record(id, alice); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Record(%d bytes) = %v, want ErrInvalidID", len(id), err)
		}
	}
}

func TestBoundForgetsOldestFirst(t *testing.T) {
	for _, dir := range []string{"", "disk"} {
		t.Run("dir="+dir, func(t *testing.T) {
			if dir != "" {
				dir = t.TempDir()
			}
			s := open(t, Options{Dir: dir, Max: 3})
			for i := range 5 {
				record(t, s, fmt.Sprint("r", i), alice)
			}
			wantUnknown(t, s, "r0")
			wantUnknown(t, s, "r1")
			for _, id := range []string{"r2", "r3", "r4"} {
				wantOwner(t, s, id, alice)
			}
			// A forgotten id's place is not reused: the bound counts
			// the ids recorded last, and r2 is still the oldest.
			if err := s.Forget("r3"); err != nil {
				t.Fatal(err)
			}
			record(t, s, "r5", bob)
			wantUnknown(t, s, "r2")
			wantOwner(t, s, "r4", alice)
			wantOwner(t, s, "r5", bob)
			// An id recorded again takes the new owner and is the newest.
			record(t, s, "r4", bob)
			wantOwner(t, s, "r4", bob)
			if s.Len() != 2 {
				t.Errorf("Len = %d, want 2", s.Len())
			}
			if dir == "" {
				return
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			again := open(t, Options{Dir: dir, Max: 3})
			wantUnknown(t, again, "r2")
			wantUnknown(t, again, "r3")
			wantOwner(t, again, "r4", bob)
			wantOwner(t, again, "r5", bob)
			// A smaller bound at the next start keeps the newest.
			_ = again.Close()
			one := open(t, Options{Dir: dir, Max: 1})
			wantUnknown(t, one, "r5")
			wantOwner(t, one, "r4", bob)
		})
	}
}

func TestSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	record(t, s, "resp_a", alice)
	record(t, s, "resp_b", bob)
	record(t, s, "resp_gone", alice)
	// The conversation a response belongs to is kept beside its owner.
	inConversation := Owner{Agent: "alice", Provider: "openai", Conversation: "c0ffee"}
	record(t, s, "resp_c", inConversation)
	if err := s.Forget("resp_gone"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed: still answers, in memory.
	wantOwner(t, s, "resp_a", alice)
	record(t, s, "resp_memory", alice)

	again := open(t, Options{Dir: dir})
	wantOwner(t, again, "resp_a", alice)
	wantOwner(t, again, "resp_b", bob)
	wantOwner(t, again, "resp_c", inConversation)
	wantUnknown(t, again, "resp_gone")
	wantUnknown(t, again, "resp_memory")
	info, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", info.Mode().Perm())
	}
}

// A crash mid-write leaves a partial last line; a power loss may leave
// garbage. Open keeps every whole line, drops the rest, and rewrites the
// log so what is appended next starts on a line of its own.
func TestTornAndGarbageLines(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	record(t, s, "resp_a", alice)
	record(t, s, "resp_b", bob)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("\x00\x00garbage\n" + `{"id":"resp_c","agent":"ali`)
	_ = f.Close()
	// A rewrite a crash interrupted.
	if err := os.WriteFile(path+tempSuffix+"123", []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}

	again := open(t, Options{Dir: dir})
	wantOwner(t, again, "resp_a", alice)
	wantOwner(t, again, "resp_b", bob)
	wantUnknown(t, again, "resp_c")
	record(t, again, "resp_d", alice)
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	lines := logLines(t, dir)
	if len(lines) != 3 || !strings.Contains(lines[2], `"resp_d"`) {
		t.Errorf("log after reopen:\n%s", strings.Join(lines, "\n"))
	}
	if left, _ := filepath.Glob(path + tempSuffix + "*"); len(left) != 0 {
		t.Errorf("leftover temporary files %v", left)
	}
	third := open(t, Options{Dir: dir})
	for _, id := range []string{"resp_a", "resp_d"} {
		wantOwner(t, third, id, alice)
	}
}

// A partial last line (a write a crash cut short) is cut off at Open and
// reported with the file, the offset and the bytes cut, even when what was
// written of it happens to be a whole JSON object: without its newline it
// was never acknowledged. The log is not rewritten for it.
func TestTornTailCut(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	record(t, s, "resp_a", alice)
	record(t, s, "resp_b", bob)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, partial := range []string{`{"id":"resp_c","agent":"alice","provider":"openai"}`, `{"id":"resp_c","ag`} {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(partial)
		_ = f.Close()
		var cuts []jsonl.Cut
		again := open(t, Options{Dir: dir, OnRepair: func(c jsonl.Cut) { cuts = append(cuts, c) }})
		want := jsonl.Cut{Path: path, Offset: before.Size(), Bytes: int64(len(partial))}
		if len(cuts) != 1 || cuts[0] != want {
			t.Fatalf("cuts %+v, want %+v", cuts, want)
		}
		wantOwner(t, again, "resp_a", alice)
		wantOwner(t, again, "resp_b", bob)
		wantUnknown(t, again, "resp_c")
		if err := again.Close(); err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(before, after) || after.Size() != before.Size() {
			t.Fatalf("log rewritten or changed for a partial last line (%d bytes, was %d)", after.Size(), before.Size())
		}
	}
	wantValidLog(t, dir)
}

// wantValidLog checks that every line of the log is whole and valid JSON.
func wantValidLog(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("log ends in a partial line: %q", b[max(0, len(b)-80):])
	}
	for i, l := range logLines(t, dir) {
		if len(b) > 0 && !json.Valid([]byte(l)) {
			t.Errorf("log line %d is not valid JSON: %q", i+1, l)
		}
	}
}

// The log is rewritten once it holds twice the bound, keeping the ids
// remembered, oldest first, and what was written while it was rewritten.
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	const max = 10
	s := open(t, Options{Dir: dir, Max: max})
	n := 5 * compactMinLines
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				id := fmt.Sprint("r", i)
				if err := s.Record(id, alice); err != nil {
					t.Error(err)
					return
				}
				s.Owner(id)
				if i%3 == 0 {
					if err := s.Forget(id); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	want := map[string]Owner{}
	s.mu.RLock()
	for id, i := range s.index {
		want[id] = s.ring[i].owner
	}
	s.mu.RUnlock()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if lines := logLines(t, dir); len(lines) > s.limit+1 {
		t.Errorf("log holds %d lines after %d ids; rewritten past %d", len(lines), n, s.limit)
	}
	again := open(t, Options{Dir: dir, Max: max})
	if again.Len() != len(want) {
		t.Errorf("reopened with %d ids, want %d", again.Len(), len(want))
	}
	for id, o := range want {
		wantOwner(t, again, id, o)
	}
}

const (
	killHelperDir = "OWNERS_KILL_HELPER_DIR"
	killHelperGen = "OWNERS_KILL_HELPER_GEN"
	killMax       = 300 // small: the log is rewritten every few hundred ids
)

// TestKillHelper is not a test: TestKill9 runs the test binary again with
// this test selected, as the process it kills. It records ids, one after
// the other, printing "ACK <id>" once each Record has returned nil.
func TestKillHelper(t *testing.T) {
	dir := os.Getenv(killHelperDir)
	if dir == "" {
		t.Skip("helper process for TestKill9")
	}
	s, err := Open(Options{Dir: dir, Max: killMax})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for k := 0; ; k++ {
		id := "g" + os.Getenv(killHelperGen) + "-" + strconv.Itoa(k)
		if err := s.Record(id, alice); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stdout, "ACK %s\n", id) // one write(2): whole lines on the pipe
	}
}

// A process killed with SIGKILL while recording ids (and rewriting its
// log), restarted and killed again, still knows the ids it acknowledged
// last: the last killMax of those it recorded, less one per kill for the
// id each run may have recorded without printing its ACK.
func TestKill9(t *testing.T) {
	if os.Getenv(killHelperDir) != "" {
		t.Skip("in the helper process")
	}
	kills := 12
	if testing.Short() {
		kills = 3
	}
	dir := t.TempDir()
	acked := faulttest.KillRuns(t, faulttest.KillLoop{
		Helper: "^TestKillHelper$",
		Env: func(gen int) []string {
			return []string{killHelperDir + "=" + dir, killHelperGen + "=" + strconv.Itoa(gen)}
		},
		Runs:   kills,
		KillAt: func(gen int) int { return 200 + 397*gen%1500 },
	})
	var cuts []jsonl.Cut
	s := open(t, Options{Dir: dir, Max: killMax, OnRepair: func(c jsonl.Cut) { cuts = append(cuts, c) }})
	wantValidLog(t, dir)
	if len(cuts) > 1 || len(cuts) == 1 && (cuts[0].Path != filepath.Join(dir, FileName) || cuts[0].Bytes <= 0) {
		t.Errorf("reopen reported %+v", cuts)
	}
	last := acked[max(0, len(acked)-(killMax-kills)):]
	for _, id := range last {
		wantOwner(t, s, id, alice)
	}
	t.Logf("%d kills, %d ids acknowledged, the last %d all known", kills, len(acked), len(last))
}

// BenchmarkRecord is the cost an exchange pays to record its response's
// owner: a map insert and one write(2) of a short line.
func BenchmarkRecord(b *testing.B) {
	for _, dir := range []string{"", "disk"} {
		b.Run("dir="+dir, func(b *testing.B) {
			if dir != "" {
				dir = b.TempDir()
			}
			s, err := Open(Options{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := s.Record("resp_0123456789abcdef0123456789abcdef"+strconv.Itoa(i), alice); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOwner is the cost of a lookup (every continuation and object
// route).
func BenchmarkOwner(b *testing.B) {
	s, err := Open(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100_000 {
		_ = s.Record("resp_"+strconv.Itoa(i), alice)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Owner("resp_" + strconv.Itoa(i%100_000))
			i++
		}
	})
}
