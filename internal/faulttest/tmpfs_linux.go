package faulttest

import (
	"syscall"
	"testing"
)

// SmallTmpfs mounts a 1 MiB tmpfs on a temporary directory, unmounted when
// the test ends, and returns it. Mounting needs CAP_SYS_ADMIN; without it
// the test is skipped with a message saying so.
func SmallTmpfs(t *testing.T) string {
	t.Helper()
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v); needs CAP_SYS_ADMIN, e.g. run as root", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return mnt
}
