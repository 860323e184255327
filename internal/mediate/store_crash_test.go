package mediate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/faulttest"
)

// Fault injection for the continuity store's log: a process killed while
// writing entries, restarted again and again, never leaves an entry that
// loads torn and loses no entry whose Put returned nil.

const (
	storeHelperDir = "STORE_CRASH_HELPER_DIR"
	storeHelperGen = "STORE_CRASH_HELPER_GEN"
)

// storeMessages is the deterministic content of an entry: large, so a
// kill often lands inside a write.
func storeMessages(key string) []json.RawMessage {
	n := 256<<10 + len(key)*8192
	return []json.RawMessage{json.RawMessage(strconv.Quote(strings.Repeat(key+"|", n/(len(key)+1))))}
}

// TestStoreCrashHelper is not a test: TestStoreKill9UnderLoad runs the test
// binary again with it selected, as the process it kills.
func TestStoreCrashHelper(t *testing.T) {
	dir := os.Getenv(storeHelperDir)
	if dir == "" {
		t.Skip("helper process for TestStoreKill9UnderLoad")
	}
	s, err := OpenStore(StoreOptions{Dir: dir, MaxEntries: 1 << 20, MaxBytes: 1 << 40})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var wg sync.WaitGroup
	for worker := range 4 {
		wg.Go(func() {
			for k := 0; ; k++ {
				key := fmt.Sprintf("g%s-w%d-%d", os.Getenv(storeHelperGen), worker, k)
				if err := s.Put(context.Background(), key, storeMessages(key)); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				fmt.Fprintf(os.Stdout, "ACK %s\n", key)
			}
		})
	}
	wg.Wait()
}

func TestStoreKill9UnderLoad(t *testing.T) {
	if os.Getenv(storeHelperDir) != "" {
		t.Skip("in the helper process")
	}
	kills := 12
	if testing.Short() {
		kills = 3
	}
	dir := t.TempDir()
	acked := faulttest.KillRuns(t, faulttest.KillLoop{
		Helper: "^TestStoreCrashHelper$",
		Env: func(gen int) []string {
			return []string{storeHelperDir + "=" + dir, storeHelperGen + "=" + strconv.Itoa(gen)}
		},
		Runs:   kills,
		KillAt: func(gen int) int { return 3 + gen%5 },
		Kill:   func(p *os.Process) { go killMidWrite(p, dir) },
	})
	left, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*"))
	s, err := OpenStore(StoreOptions{Dir: dir, MaxEntries: 1 << 20, MaxBytes: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, key := range acked {
		got, ok := s.Get(context.Background(), key)
		if !ok || !slices.EqualFunc(got, storeMessages(key), func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Errorf("acknowledged entry %s lost or torn after %d kills", key, kills)
		}
	}
	if after, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*")); len(after) > 0 {
		t.Errorf("%d temporary file(s) of interrupted writes left after reopening: %v", len(after), after)
	}
	t.Logf("%d kills, %d acknowledged entries intact, %d interrupted write(s) cleaned up", kills, len(acked), len(left))
}

// killMidWrite kills p as soon as the log grows (a write is under way),
// or after 200ms.
func killMidWrite(p *os.Process, dir string) {
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(dir, logName))
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	for start, was := time.Now(), size(); time.Since(start) < 200*time.Millisecond; {
		if size() != was {
			break
		}
	}
	_ = p.Kill()
}

// A temporary file left by an interrupted write is removed when the store
// opens; it is not an entry.
func TestStoreRemovesLeftoverTempFiles(t *testing.T) {
	dir := t.TempDir()
	orphan := filepath.Join(dir, tempPrefix+"123456")
	if err := os.WriteFile(orphan, []byte(`{"stored":"2026-01-01T00:00:00Z","messages":["half`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) || s.Len() != 0 {
		t.Fatalf("leftover temporary file: stat %v, %d entries", err, s.Len())
	}
}

const storeCompactionHelper = "STORE_COMPACTION_HELPER_DIR"

// versionMessages is version v (of run gen) of key: a small message
// naming it, then about 64 KiB that only it has.
func versionMessages(key string, gen, v int) []json.RawMessage {
	id := fmt.Sprintf(`{"key":%q,"gen":%d,"v":%d}`, key, gen, v)
	return []json.RawMessage{json.RawMessage(id), json.RawMessage(strconv.Quote(strings.Repeat(id, (64<<10)/len(id))))}
}

// TestStoreCompactionCrashHelper is not a test: TestStoreKill9DuringCompaction
// runs the test binary again with it selected. Four workers rewrite four
// keys each, again and again, so dead records pile up and compactions run
// one after another.
func TestStoreCompactionCrashHelper(t *testing.T) {
	dir := os.Getenv(storeCompactionHelper)
	if dir == "" {
		t.Skip("helper process for TestStoreKill9DuringCompaction")
	}
	s, err := OpenStore(StoreOptions{Dir: dir, MaxBytes: 4 << 20, MaxEntryBytes: 1 << 20})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	gen, _ := strconv.Atoi(os.Getenv(storeHelperGen))
	var wg sync.WaitGroup
	for worker := range 4 {
		wg.Go(func() {
			for v := 0; ; v++ {
				key := fmt.Sprintf("w%d-%d", worker, v%4)
				if err := s.Put(context.Background(), key, versionMessages(key, gen, v)); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				fmt.Fprintf(os.Stdout, "ACK %s %d %d\n", key, gen, v)
			}
		})
	}
	wg.Wait()
}

// A process killed while it compacts its log, again and again, loses no
// acknowledged entry: after the last run every key holds the version last
// acknowledged for it, or one written after it, whole.
func TestStoreKill9DuringCompaction(t *testing.T) {
	if os.Getenv(storeCompactionHelper) != "" {
		t.Skip("in the helper process")
	}
	kills := 10
	if testing.Short() {
		kills = 3
	}
	dir := t.TempDir()
	var during atomic.Int32
	acked := faulttest.KillRuns(t, faulttest.KillLoop{
		Helper: "^TestStoreCompactionCrashHelper$",
		Env: func(gen int) []string {
			return []string{storeCompactionHelper + "=" + dir, storeHelperGen + "=" + strconv.Itoa(gen)}
		},
		Runs:   kills,
		KillAt: func(gen int) int { return 40 + gen%7*13 },
		Kill:   func(p *os.Process) { go killMidCompaction(p, dir, &during) },
	})
	type version struct{ gen, v int }
	last := map[string]version{}
	for _, a := range acked {
		var key string
		var ver version
		if _, err := fmt.Sscanf(a, "%s %d %d", &key, &ver.gen, &ver.v); err != nil {
			t.Fatalf("ack %q: %v", a, err)
		}
		last[key] = ver
	}
	s, err := OpenStore(StoreOptions{Dir: dir, MaxBytes: 4 << 20, MaxEntryBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for key, want := range last {
		got, ok := s.Get(context.Background(), key)
		var ver struct{ Gen, V int }
		if !ok || len(got) != 2 || json.Unmarshal(got[0], &ver) != nil {
			t.Errorf("%s: acknowledged version %v lost", key, want)
			continue
		}
		if ver.Gen < want.gen || ver.Gen == want.gen && ver.V < want.v {
			t.Errorf("%s: version %d/%d, older than the acknowledged %d/%d", key, ver.Gen, ver.V, want.gen, want.v)
		}
		if !slices.EqualFunc(got, versionMessages(key, ver.Gen, ver.V), func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Errorf("%s: version %d/%d is not whole", key, ver.Gen, ver.V)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, tempPrefix+"*")); len(left) > 0 {
		t.Errorf("compaction files left after reopening: %v", left)
	}
	t.Logf("%d kills, %d of them while a compaction ran; %d keys hold their acknowledged version", kills, during.Load(), len(last))
}

// killMidCompaction kills p while it compacts (its new log exists), or
// after 300ms; during counts the kills that found a compaction under way.
func killMidCompaction(p *os.Process, dir string, during *atomic.Int32) {
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
		des, _ := os.ReadDir(dir)
		if slices.ContainsFunc(des, func(de os.DirEntry) bool { return strings.HasPrefix(de.Name(), tempPrefix) }) {
			during.Add(1)
			break
		}
	}
	_ = p.Kill()
}
