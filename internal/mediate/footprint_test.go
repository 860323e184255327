package mediate

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/continuity"

	"github.com/clawdapus/clawgo/internal/toolexec"
)

// The continuity store's footprint in the case issue 20 measured: 300
// conversations whose hidden round carried 512 KiB of model-written
// arguments. It prints the store's size on disk, the RSS of the process
// that wrote it and the RSS of a new process that opens the same state
// directory (a restart). Run it with CLAWGO_FOOTPRINT=1:
//
//	CLAWGO_FOOTPRINT=1 go test -run TestContinuityFootprint -v ./internal/mediate/
const footprintReloadDir = "CLAWGO_FOOTPRINT_RELOAD_DIR"

func TestContinuityFootprint(t *testing.T) {
	if os.Getenv("CLAWGO_FOOTPRINT") == "" {
		t.Skip("measurement; set CLAWGO_FOOTPRINT=1 to run")
	}
	k := kits[0]
	h := newHarness(t, k, harnessOptions{})
	const conversations = 300
	args := fmt.Sprintf(`{"q":%q}`, strings.Repeat("x", 512<<10))
	for i := range conversations {
		h.up.script = append(h.up.script, step{Calls: []tcall{call("c1", echo, args)}}, step{Text: fmt.Sprintf("answer %d", i)})
	}
	for i := range conversations {
		res := h.post(context.Background(), k.runnerRequest([]tmsg{{Role: "user", Text: fmt.Sprintf("conversation %d", i)}}, nil, false, nil))
		res.Body.Close()
	}
	h.waitEntries(t, conversations)
	h.up.script = nil
	runtime.GC()
	t.Logf("writer: %d entries (%.1f MiB), store on disk %.1f MiB, %s", h.med.opt.Continuity.(continuity.Sizer).Len(), float64(h.med.opt.Continuity.(continuity.Sizer).Bytes())/(1<<20),
		float64(dirBytes(t, h.stateDir))/(1<<20), rss())
	_ = h.med.Close() // the restarted process takes the state directory
	cmd := exec.Command(os.Args[0], "-test.run=^TestContinuityFootprintReload$", "-test.v")
	cmd.Env = append(os.Environ(), footprintReloadDir+"="+h.stateDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if _, after, ok := strings.Cut(sc.Text(), "restart:"); ok {
			t.Log("restart:" + after)
		}
	}
}

// TestContinuityFootprintReload is the restarted process of
// TestContinuityFootprint.
func TestContinuityFootprintReload(t *testing.T) {
	dir := os.Getenv(footprintReloadDir)
	if dir == "" {
		t.Skip("helper process for TestContinuityFootprint")
	}
	before := rss()
	m, err := New(Options{Runner: toolexec.New(toolexec.Options{}), StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	t.Logf("restart: %d entries loaded, before opening %s, after %s", m.opt.Continuity.(continuity.Sizer).Len(), before, rss())
}

func dirBytes(t *testing.T, dir string) int64 {
	var n int64
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// rss is the process's resident set and its peak, from /proc.
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "RSS unknown"
	}
	var cur, peak string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			cur = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			peak = strings.TrimSpace(v)
		}
	}
	return "RSS " + cur + " (peak " + peak + ")"
}
