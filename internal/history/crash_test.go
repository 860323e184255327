package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/faulttest"
	"github.com/clawdapus/clawgo/internal/jsonl"
)

// The tests in this file inject the faults a history file meets in
// production: a process killed mid-write, a full disk, a failing sync.
// Their common check is the Writer's promise: every acknowledged entry
// (Append returned nil) reads back whole, and a failed or torn write never
// takes a later entry with it.

// crashPad is the deterministic request of an entry, so a reader can tell
// an intact entry from a corrupted one. Sizes vary from 48 KiB to about
// 1 MiB: large enough that a kill often lands inside a write.
func crashPad(id string) json.RawMessage {
	h := fnv.New32a()
	h.Write([]byte(id))
	n := 48<<10 + int(h.Sum32()%(1<<20))
	unit := id + "|"
	return json.RawMessage(strconv.Quote(strings.Repeat(unit, n/len(unit)+1)))
}

var crashAgents = []string{"alice", "bob"}

const (
	crashHelperDir = "HISTORY_CRASH_HELPER_DIR"
	crashHelperGen = "HISTORY_CRASH_HELPER_GEN"
)

// cutsLog is where TestCrashHelper notes the cuts its Writer reports, one
// line each, in the history directory (beside the agents' directories,
// where no reader looks).
const cutsLog = "cuts.log"

// TestCrashHelper is not a test: TestKill9UnderLoad runs the test binary
// again with this test selected, as the process it kills. It appends
// entries from four goroutines to two agents' files until it is killed,
// printing "ACK <id>" once each Append has returned nil.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(crashHelperDir)
	if dir == "" {
		t.Skip("helper process for TestKill9UnderLoad")
	}
	gen, _ := strconv.Atoi(os.Getenv(crashHelperGen))
	noteCut := func(agent string, c jsonl.Cut) {
		if f, err := os.OpenFile(filepath.Join(dir, cutsLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			fmt.Fprintf(f, "%s %d %d\n", agent, c.Offset, c.Bytes)
			_ = f.Close()
		}
	}
	w, err := NewWriterWith(dir, WriterOptions{Sync: SyncMode(gen % 3), OnRepair: noteCut})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var wg sync.WaitGroup
	for worker := range 4 {
		wg.Go(func() {
			for k := 0; ; k++ {
				id := fmt.Sprintf("g%d-w%d-%d", gen, worker, k)
				e := Entry{ID: id, AgentID: crashAgents[(worker+k)%len(crashAgents)], Format: "openai", Model: "p/m", StatusCode: 200, Request: crashPad(id)}
				if err := w.Append(e); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				fmt.Fprintf(os.Stdout, "ACK %s\n", id) // one write(2): whole lines on the pipe
			}
		})
	}
	wg.Wait()
}

// A process killed with SIGKILL while appending large entries from many
// goroutines, restarted and killed again and again, must not lose or
// corrupt any entry it acknowledged. Each restart cuts off the partial
// line the kill may have left in each file (at most one per file per
// kill), and so does the last reopen: every line is then valid JSON.
func TestKill9UnderLoad(t *testing.T) {
	if os.Getenv(crashHelperDir) != "" {
		t.Skip("in the helper process")
	}
	kills := 16
	if testing.Short() {
		kills = 4
	}
	dir := t.TempDir()
	acked := map[string]bool{}
	// Kill after a varying number of acknowledgements, while the other
	// goroutines are in the middle of their writes.
	for _, id := range faulttest.KillRuns(t, faulttest.KillLoop{
		Helper: "^TestCrashHelper$",
		Env: func(gen int) []string {
			return []string{crashHelperDir + "=" + dir, crashHelperGen + "=" + strconv.Itoa(gen)}
		},
		Runs:   kills,
		KillAt: func(gen int) int { return 2 + gen%7 },
	}) {
		acked[id] = true
	}
	cut := map[string]int{} // per agent, by the restarts and the last reopen
	restarts := 0
	if b, err := os.ReadFile(filepath.Join(dir, cutsLog)); err == nil {
		for line := range strings.Lines(string(b)) {
			if agent, _, ok := strings.Cut(line, " "); ok {
				cut[agent]++
				restarts++
			}
		}
	}
	// Reopen, as the next cllama would, and check what it cut.
	sizes := map[string]int64{}
	for _, agent := range crashAgents {
		fi, err := os.Stat(Path(dir, agent))
		if err != nil {
			t.Fatal(err)
		}
		sizes[agent] = fi.Size()
	}
	w, cuts := repairingWriter(t, dir)
	for _, agent := range crashAgents {
		if err := w.Append(Entry{ID: "last-" + agent, AgentID: agent, Request: crashPad("last-" + agent)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range cuts() {
		if r.cut.Path != Path(dir, r.agent) || r.cut.Bytes <= 0 || r.cut.Offset+r.cut.Bytes != sizes[r.agent] {
			t.Errorf("reopen reported %+v for a file of %d bytes", r, sizes[r.agent])
		}
		cut[r.agent]++
	}
	found := 0
	for _, agent := range crashAgents {
		found += checkAfterKills(t, Path(dir, agent), acked)
		if cut[agent] > kills {
			t.Errorf("%s: %d partial lines cut after %d kills; a kill may tear at most one", agent, cut[agent], kills)
		}
	}
	if found != len(acked) {
		t.Fatalf("%d of %d acknowledged entries read back", found, len(acked))
	}
	t.Logf("%d kills, %d acknowledged entries intact; partial last lines cut: %d by restarts, %d by the last reopen", kills, len(acked), restarts, len(cuts()))
}

// checkAfterKills checks a file TestKill9UnderLoad's helpers wrote: every
// line whole and valid JSON, no entry twice, the acknowledged entries it
// holds intact. It returns how many acknowledged entries it holds.
func checkAfterKills(t *testing.T, path string, acked map[string]bool) int {
	t.Helper()
	ids := validLines(t, path)
	entries, st, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Malformed != 0 || len(entries) != len(ids) {
		t.Errorf("%s: %d invalid lines (at %v); want none", path, st.Malformed, st.MalformedAt)
	}
	seen := map[string]bool{}
	found := 0
	for _, e := range entries {
		if seen[e.ID] {
			t.Errorf("%s: entry %s twice", path, e.ID)
		}
		seen[e.ID] = true
		if !acked[e.ID] {
			continue // written whole, killed before it was acknowledged
		}
		found++
		if string(e.Request) != string(crashPad(e.ID)) {
			t.Errorf("%s: acknowledged entry %s read back corrupted (%d bytes)", path, e.ID, len(e.Request))
		}
	}
	return found
}

// A file that already ends in a partial line (the previous process died
// mid-write) has it cut off before the first new entry, and the cut is
// reported with the file, the offset cut at and the bytes cut: every line
// is then valid JSON, and every entry written whole is still there.
func TestReopenCutsTornTail(t *testing.T) {
	dir := t.TempDir()
	path := Path(dir, "alice")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	var whole []byte
	for _, id := range []string{"1", "2"} {
		line, _ := json.Marshal(Entry{ID: id, AgentID: "alice", Request: json.RawMessage(`{}`)})
		whole = append(append(whole, line...), '\n')
	}
	torn := `{"id":"x","agent_id":"alice","request":{"messages":[{"role":"us`
	if err := os.WriteFile(path, append(whole, torn...), 0o600); err != nil {
		t.Fatal(err)
	}
	w, cuts := repairingWriter(t, dir)
	if err := w.Append(Entry{ID: "3", AgentID: "alice", Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	want := []repair{{"alice", jsonl.Cut{Path: path, Offset: int64(len(whole)), Bytes: int64(len(torn))}}}
	if got := cuts(); !slices.Equal(got, want) {
		t.Fatalf("cuts reported %+v, want %+v", got, want)
	}
	if got := validLines(t, path); strings.Join(got, ",") != "1,2,3" {
		t.Fatalf("file holds entries %v, want 1,2,3", got)
	}
	// A file that ends with a whole line is left alone, and no cut is
	// reported.
	w2, cuts2 := repairingWriter(t, dir)
	if err := w2.Append(Entry{ID: "4", AgentID: "alice", Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := cuts2(); len(got) != 0 {
		t.Fatalf("a whole file was cut: %+v", got)
	}
	if got := validLines(t, path); strings.Join(got, ",") != "1,2,3,4" {
		t.Fatalf("file holds entries %v, want 1,2,3,4", got)
	}
}

// repair is a cut reported to WriterOptions.OnRepair.
type repair struct {
	agent string
	cut   jsonl.Cut
}

// repairingWriter returns a Writer on dir and the cuts it has reported
// so far.
func repairingWriter(t *testing.T, dir string) (*Writer, func() []repair) {
	t.Helper()
	var mu sync.Mutex
	var cuts []repair
	w, err := NewWriterWith(dir, WriterOptions{Sync: SyncNever, OnRepair: func(agent string, c jsonl.Cut) {
		mu.Lock()
		cuts = append(cuts, repair{agent, c})
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, func() []repair {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(cuts)
	}
}

// validLines checks that every line of the file at path is a whole line
// of valid JSON, the file ending with a newline, and returns the entries'
// ids in file order.
func validLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s ends in a partial line: %.80q", path, b[max(0, len(b)-80):])
	}
	var out []string
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if len(b) == 0 {
			break
		}
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Errorf("%s: line %d is not valid JSON (%v): %.80q", path, i+1, err, line)
			continue
		}
		out = append(out, e.ID)
	}
	return out
}

func ids(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// faultFile is a history file on a simulated small disk: writes past
// capacity are cut short with ENOSPC, as write(2) does on a full
// filesystem. Truncate and Sync can be made to fail.
type faultFile struct {
	*os.File
	capacity     *int64
	failTruncate error
	failSync     error
	// mu guards failSync against the background syncer; syncs counts
	// successful syncs.
	mu    sync.Mutex
	syncs atomic.Int64
}

func (f *faultFile) setFailSync(err error) {
	f.mu.Lock()
	f.failSync = err
	f.mu.Unlock()
}

func (f *faultFile) Write(p []byte) (int, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	room := *f.capacity - fi.Size()
	if room >= int64(len(p)) {
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:max(room, 0)])
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

func (f *faultFile) Truncate(size int64) error {
	if f.failTruncate != nil {
		return f.failTruncate
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Sync() error {
	f.mu.Lock()
	fail := f.failSync
	f.mu.Unlock()
	if fail != nil {
		return fail
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	f.syncs.Add(1)
	return nil
}

// faultWriter returns a Writer whose files are faultFiles sharing one
// capacity.
func faultWriter(t *testing.T, capacity *int64) (*Writer, *faultFile) {
	t.Helper()
	// Synced on every append, so a failing sync is seen by Append.
	w, err := NewWriterWith(t.TempDir(), WriterOptions{Sync: SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	ff := &faultFile{capacity: capacity}
	w.openFile = func(path string) (appendFile, error) {
		f, err := openAppend(path)
		if err != nil {
			return nil, err
		}
		ff.File = f.(*os.File)
		return ff, nil
	}
	return w, ff
}

// readBack checks that the acknowledged entries, and only whole entries,
// are in the file, and returns the number of invalid lines.
func readBack(t *testing.T, w *Writer, acked []string) int {
	t.Helper()
	entries, st, err := ReadFile(Path(w.dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range entries {
		if string(e.Request) != string(crashPad(e.ID)) {
			t.Errorf("entry %s read back corrupted", e.ID)
		}
		got[e.ID] = true
	}
	for _, id := range acked {
		if !got[id] {
			t.Errorf("acknowledged entry %s lost (read %v, %d invalid lines)", id, ids(entries), st.Malformed)
		}
	}
	return st.Malformed
}

// A full disk fails the entry that does not fit, leaves no partial line,
// and the entries after it (once there is room again) read back whole.
func TestAppendENOSPCInjected(t *testing.T) {
	capacity := int64(3 << 20)
	w, _ := faultWriter(t, &capacity)
	var acked []string
	failed := 0
	for i := range 12 {
		id := fmt.Sprintf("e%d", i)
		err := w.Append(Entry{ID: id, AgentID: "alice", Request: crashPad(id)})
		switch {
		case err == nil:
			acked = append(acked, id)
		case errors.Is(err, syscall.ENOSPC):
			failed++
		default:
			t.Fatal(err)
		}
		if i == 8 {
			capacity = 64 << 20 // space freed
		}
	}
	if failed == 0 {
		t.Fatal("the simulated disk never filled")
	}
	if bad := readBack(t, w, acked); bad != 0 {
		t.Errorf("%d invalid line(s) left by failed writes; want none", bad)
	}
}

// When the partial write cannot be cut back either, the next Append ends
// the torn line first: one invalid line, and no entry lost with it.
func TestAppendTornTailAfterFailedTruncate(t *testing.T) {
	capacity := int64(200 << 10)
	w, ff := faultWriter(t, &capacity)
	ok := func(id string) {
		t.Helper()
		if err := w.Append(Entry{ID: id, AgentID: "alice", Request: crashPad(id)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; ; i++ { // fill until a write is cut short
		id := fmt.Sprintf("fill%d", i)
		ff.failTruncate = syscall.EIO
		if err := w.Append(Entry{ID: id, AgentID: "alice", Request: crashPad(id)}); err != nil {
			break
		}
	}
	capacity = 64 << 20
	ok("after")
	ff.failTruncate = nil
	entries, st, err := ReadFile(Path(w.dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Malformed != 1 || len(entries) == 0 || entries[len(entries)-1].ID != "after" {
		t.Fatalf("entries %v, %d invalid lines; want the torn line counted and \"after\" intact", ids(entries), st.Malformed)
	}
	readBack(t, w, []string{"after"})
}

// A failed sync means the entry may not be on disk: it is not
// acknowledged and it is removed, so the file holds only acknowledged
// entries.
func TestAppendSyncFailure(t *testing.T) {
	capacity := int64(64 << 20)
	w, ff := faultWriter(t, &capacity)
	if err := w.Append(Entry{ID: "a", AgentID: "alice", Request: crashPad("a")}); err != nil {
		t.Fatal(err)
	}
	ff.failSync = syscall.EIO
	if err := w.Append(Entry{ID: "b", AgentID: "alice", Request: crashPad("b")}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing sync: %v", err)
	}
	ff.failSync = nil
	if err := w.Append(Entry{ID: "c", AgentID: "alice", Request: crashPad("c")}); err != nil {
		t.Fatal(err)
	}
	entries, st, _ := ReadFile(Path(w.dir, "alice"))
	if strings.Join(ids(entries), ",") != "a,c" || st.Malformed != 0 {
		t.Fatalf("entries %v, %d invalid; want a,c", ids(entries), st.Malformed)
	}
}

// BenchmarkAppend measures what the default fsync costs per entry.
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []struct {
		name string
		o    WriterOptions
	}{{"always", WriterOptions{Sync: SyncAlways}}, {"interval", WriterOptions{}}, {"never", WriterOptions{Sync: SyncNever}}} {
		for _, size := range []int{1 << 10, 64 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB", mode.name, size>>10), func(b *testing.B) {
				w, err := NewWriterWith(b.TempDir(), mode.o)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				req := json.RawMessage(strconv.Quote(strings.Repeat("x", size)))
				b.SetBytes(int64(size))
				for i := 0; b.Loop(); i++ {
					if err := w.Append(Entry{ID: strconv.Itoa(i), AgentID: "alice", Request: req}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// With the default interval sync, entries reach stable storage in the
// background: a file written is synced within the interval, a failed sync
// is reported and retried, and Close syncs what is left.
func TestIntervalSync(t *testing.T) {
	var mu sync.Mutex
	var reported []error
	w, err := NewWriterWith(t.TempDir(), WriterOptions{SyncEvery: 20 * time.Millisecond, OnSyncError: func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ff := &faultFile{capacity: new(int64)}
	*ff.capacity = 64 << 20
	w.openFile = func(path string) (appendFile, error) {
		f, err := openAppend(path)
		if err != nil {
			return nil, err
		}
		ff.File = f.(*os.File)
		return ff, nil
	}
	ff.setFailSync(syscall.EIO)
	if err := w.Append(Entry{ID: "a", AgentID: "alice"}); err != nil {
		t.Fatalf("append does not wait for the sync: %v", err)
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(reported) > 0 })
	if !errors.Is(reported[0], syscall.EIO) {
		t.Fatalf("reported %v", reported[0])
	}
	ff.setFailSync(nil)
	waitFor(t, func() bool { return ff.syncs.Load() > 0 && !w.isDirty("alice") })
	if err := w.Append(Entry{ID: "b", AgentID: "alice"}); err != nil {
		t.Fatal(err)
	}
	before := ff.syncs.Load()
	dirty := w.isDirty("alice")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if dirty && ff.syncs.Load() == before {
		t.Fatal("Close did not sync the entry written since the last sync")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *Writer) isDirty(agent string) bool {
	w.mu.Lock()
	af := w.files[agent].open[0]
	w.mu.Unlock()
	af.mu.Lock()
	defer af.mu.Unlock()
	return af.dirty
}

// A partial last line that cannot be cut when the file is opened (a
// failing truncate) is cut before the first entry once it can be, and
// reported then.
func TestCutRetriedBeforeFirstEntry(t *testing.T) {
	capacity := int64(64 << 20)
	w, ff := faultWriter(t, &capacity)
	var cuts []jsonl.Cut
	w.opts.OnRepair = func(_ string, c jsonl.Cut) { cuts = append(cuts, c) }
	path := Path(w.dir, "alice")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	torn := `{"id":"x","agent_id":"al`
	if err := os.WriteFile(path, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	ff.failTruncate = syscall.EIO
	af, err := w.file("alice")
	if err != nil {
		t.Fatal(err)
	}
	if !af.torn || len(cuts) != 0 {
		t.Fatalf("torn %v, cuts %+v after a failed cut", af.torn, cuts)
	}
	ff.failTruncate = nil
	if err := w.Append(Entry{ID: "a", AgentID: "alice", Request: crashPad("a")}); err != nil {
		t.Fatal(err)
	}
	if len(cuts) != 1 || cuts[0] != (jsonl.Cut{Path: path, Offset: 0, Bytes: int64(len(torn))}) {
		t.Fatalf("cuts %+v", cuts)
	}
	if got := validLines(t, path); strings.Join(got, ",") != "a" {
		t.Fatalf("entries %v", got)
	}
}
