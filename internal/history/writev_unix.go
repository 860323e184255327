//go:build unix

package history

import (
	"errors"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// writeParts writes a line's parts to f. To an open file it is one
// writev(2) (repeated only after a short write): one system call for the
// whole line rather than one per part, and, the file being opened
// O_APPEND, a line that another process appending to the same file cannot
// split. Anything else gets the parts one after the other.
func writeParts(f appendFile, parts net.Buffers) error {
	file, ok := f.(*os.File)
	if !ok {
		_, err := parts.WriteTo(f)
		return err
	}
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	iov := [][]byte(parts)
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		for len(iov) > 0 {
			n, err := unix.Writev(int(fd), iov[:min(len(iov), maxIOV)])
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				werr = err
				return true
			}
			if n == 0 {
				werr = io.ErrShortWrite
				return true
			}
			iov = consumed(iov, n)
		}
		return true
	}); err != nil {
		return err
	}
	if werr != nil {
		return &os.PathError{Op: "write", Path: file.Name(), Err: werr}
	}
	return nil
}

// maxIOV stays under every system's IOV_MAX (1024 on Linux).
const maxIOV = 1024

// consumed drops the first n bytes of iov.
func consumed(iov [][]byte, n int) [][]byte {
	for len(iov) > 0 && n >= len(iov[0]) {
		n -= len(iov[0])
		iov = iov[1:]
	}
	if len(iov) > 0 {
		iov[0] = iov[0][n:]
	}
	return iov
}
