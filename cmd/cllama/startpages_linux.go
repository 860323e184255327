package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/clawdapus/clawgo/internal/proxy"
)

// releaseStartPages gives back the memory that starting cllama took and
// serving it does not need, once it has been serving for a second
// (startSettle: not before, where it would delay the first request):
//
//   - The pages of its own executable that start-up read. Package
//     initialisation runs code and reads tables across most of the binary
//     (the metrics, tracing, policy and MCP libraries included), and the
//     kernel maps 64 KiB around each page touched: about 19 MiB of a
//     50 MiB binary is resident after start, most of it code and data
//     that never runs again. Each read-only mapping of the executable is
//     advised MADV_PAGEOUT, which frees the pages only this process maps
//     (the kernel does so only for a process that owns the file or may
//     write it), then MADV_DONTNEED, which takes them out of this
//     process's resident set in any case (they stay in the page cache,
//     which the kernel reclaims when it needs the memory). Those a request
//     uses come back from the file on first use. Only read-only mappings
//     holding nothing but the file's content are touched (smaps
//     "Anonymous: 0 kB": no page of them was ever written, as relocations
//     would), so nothing is lost.
//   - The heap that start-up left as garbage (proxy.FreeHeap).
//
// It returns how many bytes of mappings it advised. Kernels before 5.4
// have no MADV_PAGEOUT: MADV_DONTNEED still applies, and the error says
// so.
func releaseStartPages() (int64, error) {
	proxy.FreeHeap()
	return releaseExecutable(true)
}

// releaseIdlePages takes the executable's pages out of the resident set
// once traffic has stopped (proxy.Options.Idle): the code requests ran
// stays in the page cache, so the next request maps it again without
// reading the disk, and is not paged out.
func releaseIdlePages() { _, _ = releaseExecutable(false) }

// releaseExecutable advises the executable's read-only mappings that hold
// only the file's content MADV_DONTNEED, after MADV_PAGEOUT with pageout.
func releaseExecutable(pageout bool) (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var advised int64
	var errs []error
	for _, m := range fileOnlyMappings(smaps, exe) {
		// The range is not Go memory: it goes to the kernel as numbers.
		if pageout {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.lo, m.hi-m.lo, unix.MADV_PAGEOUT); errno != 0 {
				errs = append(errs, fmt.Errorf("madvise(MADV_PAGEOUT) %s: %w", exe, errno))
			}
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.lo, m.hi-m.lo, unix.MADV_DONTNEED); errno != 0 {
			errs = append(errs, fmt.Errorf("madvise(MADV_DONTNEED) %s: %w", exe, errno))
			continue
		}
		advised += int64(m.hi - m.lo)
	}
	return advised, errors.Join(errs...)
}

type addrRange struct{ lo, hi uintptr }

// fileOnlyMappings are the read-only mappings of the file exe, in
// /proc/self/smaps, that hold no anonymous (written) page.
func fileOnlyMappings(smaps []byte, exe string) []addrRange {
	var out []addrRange
	var cur addrRange
	in := false
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Bytes()
		if lo, hi, ok := readOnlyMapping(line, exe); ok {
			cur, in = addrRange{lo, hi}, true
			continue
		}
		if !in {
			continue
		}
		if f := bytes.Fields(line); len(f) >= 2 && string(f[0]) == "Anonymous:" {
			if string(f[1]) == "0" {
				out = append(out, cur)
			}
			in = false
		} else if len(f) > 0 && !bytes.HasSuffix(f[0], []byte(":")) {
			in = false // another mapping's header: this one said nothing
		}
	}
	return out
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
