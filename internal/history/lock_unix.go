//go:build unix

package history

import (
	"errors"
	"syscall"
)

// lockAlone tries to lock f exclusively, without waiting, and reports
// whether it is the only Writer with f open: every Writer holds its files
// locked shared (lockShared), so another one that has f open makes the
// attempt fail. A file that is no *os.File, or a filesystem without
// flock(2), counts as alone: one Writer per file is then the operator's
// to keep, as documented.
func lockAlone(f appendFile) bool {
	alone := true
	control(f, func(fd int) {
		alone = !errors.Is(flock(fd, syscall.LOCK_EX|syscall.LOCK_NB), syscall.EWOULDBLOCK)
	})
	return alone
}

// lockShared locks f shared (in place of an exclusive lock lockAlone
// took) for as long as it stays open; the kernel drops the lock when the
// file is closed or its process ends, however it ends. It waits only
// while another Writer holds f exclusively, which lasts as long as that
// Writer's opening of it.
func lockShared(f appendFile) {
	control(f, func(fd int) { _ = flock(fd, syscall.LOCK_SH) })
}

// control runs fn on f's descriptor, if f has one.
func control(f appendFile, fn func(fd int)) {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// flock is flock(2), retried when a signal interrupts it.
func flock(fd, how int) error {
	for {
		if err := syscall.Flock(fd, how); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
