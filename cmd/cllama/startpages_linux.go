package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"golang.org/x/sys/unix"
)

// releaseStartPages gives back the memory that starting cllama took and
// serving it does not need, once it is ready to serve:
//
//   - The pages of its own executable that start-up read. Package
//     initialisation runs code and reads tables across most of the binary
//     (the metrics, tracing, policy and MCP libraries included), and the
//     kernel maps 64 KiB around each page touched: about 19 MiB of a
//     50 MiB binary is resident after start, most of it code and data
//     that never runs again. Each read-only mapping of the executable is
//     advised MADV_PAGEOUT, which drops the pages only this process maps;
//     those a request uses come back from the file on first use. Only
//     read-only mappings are touched: their content is the file's, so
//     nothing is lost (the kernel reclaims the same pages under memory
//     pressure).
//   - The heap that start-up left as garbage (debug.FreeOSMemory).
//
// It returns how many bytes of mappings it advised. Kernels before 5.4
// have no MADV_PAGEOUT: the pages then stay, and the error says so.
func releaseStartPages() (int64, error) {
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	var advised int64
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		lo, hi, ok := readOnlyMapping(sc.Bytes(), exe)
		if !ok {
			continue
		}
		// The range is not Go memory: it goes to the kernel as numbers.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, lo, hi-lo, unix.MADV_PAGEOUT); errno != 0 {
			errs = append(errs, fmt.Errorf("madvise(MADV_PAGEOUT) %s: %w", exe, errno))
			continue
		}
		advised += int64(hi - lo)
	}
	return advised, errors.Join(errs...)
}

// readOnlyMapping parses one line of /proc/self/maps
// ("lo-hi perms offset dev inode path") and reports the range of a
// mapping of the file exe that cannot be written.
func readOnlyMapping(line []byte, exe string) (lo, hi uintptr, ok bool) {
	fields := bytes.Fields(line)
	if len(fields) < 6 || string(bytes.Join(fields[5:], []byte(" "))) != exe {
		return 0, 0, false
	}
	perms := fields[1]
	if len(perms) < 2 || perms[0] != 'r' || perms[1] != '-' {
		return 0, 0, false
	}
	a, b, found := bytes.Cut(fields[0], []byte("-"))
	if !found {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(string(a), 16, 64)
	h, err2 := strconv.ParseUint(string(b), 16, 64)
	if err1 != nil || err2 != nil || h <= l {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
