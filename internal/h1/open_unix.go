//go:build linux || darwin || freebsd || netbsd || openbsd

package h1

import (
	"net"
	"syscall"
)

// open reports whether an idle connection can carry a request: the peer
// has neither closed it nor sent anything unasked. One non-blocking peek.
func open(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read (EAGAIN) is the one healthy answer: a byte is
		// data nobody asked for, none is the peer's close.
		alive = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // never wait
	})
	return err == nil && alive
}
