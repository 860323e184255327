//go:build unix

package mediate

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on path (created if need be) for as
// long as the store is open: two cllama processes appending to one log
// would interleave records. The lock is the file's open description, so a
// second store in the same process is refused too; the kernel drops it
// when the process ends, however it ends.
func lockDir(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		switch {
		case errors.Is(err, syscall.EWOULDBLOCK):
			return nil, fmt.Errorf("%s is held by another cllama: each one needs a CLLAMA_STATE_DIR of its own (or CLLAMA_STATE_URL to share continuity)", path)
		case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOSYS):
			// A filesystem without locks: one cllama per directory is
			// then the operator's to keep, as where flock(2) is missing.
			return func() {}, nil
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}
