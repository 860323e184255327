package mediate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
				if err := s.Put(key, storeMessages(key)); err != nil {
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
		got, ok := s.Get(key)
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
