package mediate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/clawdapus/clawgo/internal/faulttest"
)

// On a full filesystem (a 1 MiB tmpfs) a Put that does not fit fails, its
// partial record is cut off, and the entries already stored reload intact.
// Mounting needs CAP_SYS_ADMIN; without it the test is skipped.
func TestStoreENOSPCTmpfs(t *testing.T) {
	mnt := faulttest.SmallTmpfs(t)
	s, err := OpenStore(StoreOptions{Dir: mnt})
	if err != nil {
		t.Fatal(err)
	}
	small := []json.RawMessage{json.RawMessage(strconv.Quote(strings.Repeat("s", 200<<10)))}
	if err := s.Put(context.Background(), "kept", small); err != nil {
		t.Fatal(err)
	}
	big := []json.RawMessage{json.RawMessage(strconv.Quote(strings.Repeat("b", 900<<10)))}
	if err := s.Put(context.Background(), "kept", big); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Put over the free space: %v, want ENOSPC", err)
	}
	if left, _ := filepath.Glob(filepath.Join(mnt, tempPrefix+"*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	_ = s.Close()
	again, err := OpenStore(StoreOptions{Dir: mnt})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got, ok := again.Get(context.Background(), "kept")
	if !ok || len(got) != 1 || string(got[0]) != string(small[0]) {
		t.Fatal("the entry stored before the disk filled did not reload whole")
	}
	// The failed write was cut off: the log holds the kept entry only.
	if fi, err := os.Stat(filepath.Join(mnt, logName)); err != nil || fi.Size() > 201<<10 {
		t.Fatalf("log after the failed write: %v, %d bytes", err, fi.Size())
	}
}

// A log reopened with a smaller bound is compacted at open; when the disk
// has no room for the compacted copy, the store opens all the same, on the
// log as it was, and its entries read back.
func TestStoreOpensWhenCompactionCannotRun(t *testing.T) {
	mnt := faulttest.SmallTmpfs(t)
	s, err := OpenStore(StoreOptions{Dir: mnt})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.Put(context.Background(), strconv.Itoa(i), []json.RawMessage{json.RawMessage(strconv.Quote(strings.Repeat(strconv.Itoa(i), 160<<10)))}); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.Close()
	before, err := os.Stat(filepath.Join(mnt, logName))
	if err != nil {
		t.Fatal(err)
	}
	again, err := OpenStore(StoreOptions{Dir: mnt, MaxBytes: 330 << 10})
	if err != nil {
		t.Fatalf("a store whose compaction at open found no room did not open: %v", err)
	}
	defer again.Close()
	if after, _ := os.Stat(filepath.Join(mnt, logName)); after.Size() != before.Size() {
		t.Fatalf("the log went from %d to %d bytes: the compaction found room after all, the test proves nothing", before.Size(), after.Size())
	}
	if left, _ := filepath.Glob(filepath.Join(mnt, tempPrefix+"*")); len(left) > 0 {
		t.Errorf("the failed compaction left %v", left)
	}
	if got, ok := again.Get(context.Background(), "4"); !ok || !strings.HasPrefix(string(got[0]), `"4444`) {
		t.Error("the newest entry does not read back")
	}
	if again.Len() != 2 {
		t.Errorf("%d entries within a 330 KiB bound, want the newest 2", again.Len())
	}
}
