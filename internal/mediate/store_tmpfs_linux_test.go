package mediate

import (
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
	if err := s.Put("kept", small); err != nil {
		t.Fatal(err)
	}
	big := []json.RawMessage{json.RawMessage(strconv.Quote(strings.Repeat("b", 900<<10)))}
	if err := s.Put("kept", big); !errors.Is(err, syscall.ENOSPC) {
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
	got, ok := again.Get("kept")
	if !ok || len(got) != 1 || string(got[0]) != string(small[0]) {
		t.Fatal("the entry stored before the disk filled did not reload whole")
	}
	// The failed write was cut off: the log holds the kept entry only.
	if fi, err := os.Stat(filepath.Join(mnt, logName)); err != nil || fi.Size() > 201<<10 {
		t.Fatalf("log after the failed write: %v, %d bytes", err, fi.Size())
	}
}
