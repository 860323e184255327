package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/clawdapus/clawgo/internal/faulttest"
)

// The same promise on a real full filesystem: a 1 MiB tmpfs. Mounting
// needs CAP_SYS_ADMIN; without it the test is skipped (the injected-writer
// test, TestAppendENOSPCInjected, still runs).
func TestAppendENOSPCTmpfs(t *testing.T) {
	mnt := faulttest.SmallTmpfs(t)
	// Ballast, removed later to free space as an operator would.
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 512<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(filepath.Join(mnt, "history"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var acked []string
	failed := 0
	for i := range 16 {
		if i == 12 {
			if err := os.Remove(ballast); err != nil {
				t.Fatal(err)
			}
		}
		id := fmt.Sprintf("t%d", i)
		req := fmt.Sprintf("%q", fmt.Sprintf("%0*d", 60<<10+i*1000, i))
		err := w.Append(Entry{ID: id, AgentID: "alice", Request: []byte(req)})
		switch {
		case err == nil:
			acked = append(acked, id)
		case errors.Is(err, syscall.ENOSPC):
			failed++
		default:
			t.Fatal(err)
		}
	}
	if failed == 0 {
		t.Fatal("the 1 MiB tmpfs never filled")
	}
	entries, st, err := ReadFile(Path(w.dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range entries {
		got[e.ID] = true
	}
	for _, id := range acked {
		if !got[id] {
			t.Errorf("acknowledged entry %s lost", id)
		}
	}
	if len(entries) != len(acked) || st.Malformed != 0 {
		t.Errorf("read %d entries and %d invalid lines; want the %d acknowledged and none invalid", len(entries), st.Malformed, len(acked))
	}
	t.Logf("%d appends acknowledged, %d refused with ENOSPC", len(acked), failed)
}
