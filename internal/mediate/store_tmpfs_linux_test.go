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

// On a full filesystem (a 1 MiB tmpfs) a Put that does not fit fails,
// leaves no temporary file, and the entries already stored reload intact.
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
	again, err := OpenStore(StoreOptions{Dir: mnt})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := again.Get("kept")
	if !ok || len(got) != 1 || string(got[0]) != string(small[0]) {
		t.Fatal("the entry stored before the disk filled did not reload whole")
	}
	if _, err := os.Stat(filepath.Join(mnt, "kept"+entrySuffix)); err != nil {
		t.Fatal(err)
	}
}
