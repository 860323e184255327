package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Once it has started, cllama gives back the pages of its executable that start-up
// read: most of what is resident of the binary drops out of the process,
// and the process goes on running code from it (this test does, after).
func TestReleaseStartPages(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skip("needs /proc")
	}
	touchAll(t, exe)
	before := residentReadOnly(t, exe)
	advised, err := releaseStartPages()
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("this kernel has no MADV_PAGEOUT: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	after := residentReadOnly(t, exe)
	t.Logf("executable's read-only mappings: %d KiB advised, %d KiB resident before, %d KiB after", advised>>10, before>>10, after>>10)
	if advised == 0 || after > before/2 {
		t.Fatalf("resident pages of the executable: %d KiB before, %d KiB after releasing (%d KiB advised); want less than half left", before>>10, after>>10, advised>>10)
	}
}

// The writable mappings (data, bss) hold state, not the file's content:
// they are never advised.
func TestReadOnlyMapping(t *testing.T) {
	exe := "/usr/local/bin/cllama"
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"00400000-01343000 r-xp 00000000 08:01 123 /usr/local/bin/cllama", true},
		{"01343000-0246d000 r--p 00f43000 08:01 123 /usr/local/bin/cllama", true},
		{"0246d000-02505000 rw-p 0206d000 08:01 123 /usr/local/bin/cllama", false},
		{"02505000-0454f000 rw-p 00000000 00:00 0", false},
		{"7f0000000000-7f0000001000 r--p 00000000 08:01 9 /usr/lib/other.so", false},
		{"00400000-01343000 r-xp 00000000 08:01 123 /usr/local/bin/cllama (deleted)", false},
		{"01343000-0040000 r--p 00f43000 08:01 123 /usr/local/bin/cllama", false},
		{"garbage", false},
	} {
		if _, _, ok := readOnlyMapping([]byte(tc.line), exe); ok != tc.ok {
			t.Errorf("%q: advised %v, want %v", tc.line, ok, tc.ok)
		}
	}
}

// residentReadOnly is how much of exe's read-only mappings is resident
// (the Rss lines of /proc/self/smaps).
func residentReadOnly(t *testing.T, exe string) int64 {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("needs /proc/self/smaps")
	}
	var total int64
	in := false
	for _, line := range bytes.Split(smaps, []byte("\n")) {
		if _, _, ok := readOnlyMapping(line, exe); ok {
			in = true
			continue
		}
		if f := bytes.Fields(line); len(f) > 0 && bytes.Contains(f[0], []byte("-")) && !bytes.HasSuffix(f[0], []byte(":")) {
			in = false // another mapping's header
			continue
		}
		if in && bytes.HasPrefix(line, []byte("Rss:")) {
			kb, _ := strconv.ParseInt(string(bytes.Fields(line)[1]), 10, 64)
			total += kb << 10
		}
	}
	return total
}

// A read-only mapping of the executable that holds a written page (a
// relocated table, as a dynamically linked build has) keeps its pages:
// dropping them would bring back the file's bytes in their place.
func TestFileOnlyMappings(t *testing.T) {
	exe := "/usr/local/bin/cllama"
	smaps := []byte(`00400000-01343000 r-xp 00000000 08:01 123 /usr/local/bin/cllama
Size:              15628 kB
Rss:                2048 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
01343000-0246d000 r--p 00f43000 08:01 123 /usr/local/bin/cllama
Size:              17576 kB
Anonymous:             4 kB
VmFlags: rd mr mw me
0246d000-02505000 rw-p 0206d000 08:01 123 /usr/local/bin/cllama
Anonymous:             0 kB
02505000-0454f000 r--p 00000000 00:00 0
Anonymous:             0 kB
0454f000-04550000 r--p 02105000 08:01 123 /usr/local/bin/cllama
Size:                  4 kB
`)
	got := fileOnlyMappings(smaps, exe)
	if len(got) != 1 || got[0] != (addrRange{0x400000, 0x1343000}) {
		t.Fatalf("mappings to release: %x", got)
	}
}

// Once traffic has stopped, the code requests ran leaves the resident set
// but not the page cache: the next request maps it again without reading
// the disk.
func TestReleaseIdlePagesKeepsThePageCache(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skip("needs /proc")
	}
	touchAll(t, exe) // the whole executable resident, as after much traffic
	before := residentReadOnly(t, exe)
	releaseIdlePages()
	after := residentReadOnly(t, exe)
	cached := inCore(t, exe)
	t.Logf("executable's read-only mappings: %d KiB resident before, %d KiB after, %d KiB in the page cache", before>>10, after>>10, cached>>10)
	// Code running meanwhile (other tests' goroutines) maps some back.
	if after > before/4 {
		t.Fatalf("resident pages of the executable: %d KiB before, %d KiB after; want less than a quarter left", before>>10, after>>10)
	}
	if cached < before-after {
		t.Fatalf("the released pages left the page cache: %d KiB released, %d KiB cached", (before-after)>>10, cached>>10)
	}
}

// inCore is how much of exe's file-only read-only mappings is in memory
// (mincore(2): the page cache, whether or not this process maps it).
func inCore(t *testing.T, exe string) int64 {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("needs /proc/self/smaps")
	}
	page := int64(os.Getpagesize())
	var total int64
	for _, m := range fileOnlyMappings(smaps, exe) {
		n := (int64(m.hi-m.lo) + page - 1) / page
		vec := make([]byte, n)
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, m.lo, m.hi-m.lo, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Skipf("mincore: %v", errno)
		}
		for _, v := range vec {
			total += int64(v&1) * page
		}
	}
	return total
}

// touchAll reads every page of exe's file-only read-only mappings, which
// maps them into this process (through /proc/self/mem: no pointer is made
// from an address).
func touchAll(t *testing.T, exe string) {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("needs /proc/self/smaps")
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Skipf("needs /proc/self/mem: %v", err)
	}
	defer mem.Close()
	buf := make([]byte, 1<<20)
	for _, m := range fileOnlyMappings(smaps, exe) {
		for off := m.lo; off < m.hi; off += uintptr(len(buf)) {
			n := min(uintptr(len(buf)), m.hi-off)
			if _, err := mem.ReadAt(buf[:n], int64(off)); err != nil {
				t.Skipf("reading /proc/self/mem: %v", err)
			}
		}
	}
}
