package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests in this file hold group commit (concurrent appends to one
// file written as one batch) to the Writer's promises: an Append returns
// only once its own line is written and synced, a batch that fails leaves
// no partial entry, and each Append gets the outcome it would have had
// alone.

// gateFile is a faultFile whose first write waits for the gate to open,
// holding the file's writer there while other appends queue up; and whose
// syncs can be made to fail with EIO.
type gateFile struct {
	*faultFile
	entered chan struct{} // closed when the first write starts
	gate    chan struct{} // the first write proceeds once it is closed
	first   sync.Once
	// After okSyncs syncs, the next failSyncs fail (both guarded by the
	// Writer's file lock).
	okSyncs, failSyncs int
}

func (g *gateFile) Write(p []byte) (int, error) {
	g.first.Do(func() {
		close(g.entered)
		<-g.gate
	})
	return g.faultFile.Write(p)
}

func (g *gateFile) Sync() error {
	if g.okSyncs > 0 {
		g.okSyncs--
	} else if g.failSyncs > 0 {
		g.failSyncs--
		return &os.PathError{Op: "sync", Path: g.Name(), Err: syscall.EIO}
	}
	return g.faultFile.Sync()
}

// gateWriter returns a Writer (SyncAlways) whose files are one gateFile
// with the given capacity.
func gateWriter(t *testing.T, capacity *int64) (*Writer, *gateFile) {
	t.Helper()
	w, err := NewWriterWith(t.TempDir(), WriterOptions{Sync: SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	g := &gateFile{faultFile: &faultFile{capacity: capacity}, entered: make(chan struct{}), gate: make(chan struct{})}
	w.openFile = func(path string) (appendFile, error) {
		f, err := openAppend(path)
		if err != nil {
			return nil, err
		}
		g.File = f.(*os.File)
		return g, nil
	}
	return w, g
}

// queued is how many entries wait for alice's file to be written.
func (w *Writer) queued() int {
	w.mu.Lock()
	fs := w.files["alice"]
	w.mu.Unlock()
	if fs == nil {
		return 0
	}
	af := fs.open[0]
	af.qmu.Lock()
	defer af.qmu.Unlock()
	return len(af.queue)
}

// sized is an entry whose request is a string of about n bytes derived
// from its id, so a reader can tell it read back whole.
func sized(id string, n int) Entry {
	return Entry{ID: id, AgentID: "alice", Format: "openai", Model: "p/m", StatusCode: 200, Request: padOf(id, n)}
}

func padOf(id string, n int) json.RawMessage {
	unit := id + "|" // ids here are plain: no quoting needed
	return json.RawMessage(`"` + strings.Repeat(unit, n/len(unit)+1) + `"`)
}

// appendsBehindGate starts an append of first, waits until it is writing
// (held at the gate), then starts the appends of rest one after the
// other, each queued before the next starts, and returns their outcomes
// (first's last) once the gate is opened.
func appendsBehindGate(t *testing.T, w *Writer, g *gateFile, first Entry, rest []Entry, open func()) []error {
	t.Helper()
	errs := make([]error, len(rest)+1)
	var wg sync.WaitGroup
	wg.Go(func() { errs[len(rest)] = w.Append(first) })
	<-g.entered
	for i, e := range rest {
		wg.Go(func() { errs[i] = w.Append(e) })
		waitFor(t, func() bool { return w.queued() == i+1 })
	}
	open()
	close(g.gate)
	wg.Wait()
	return errs
}

// Appends that arrive while a write is under way are written together,
// with one sync for all of them, in the order they came; each returns
// nil only once its line is written and synced.
func TestGroupCommitBatches(t *testing.T) {
	capacity := int64(64 << 20)
	w, g := gateWriter(t, &capacity)
	var rest []Entry
	for i := range 16 {
		rest = append(rest, sized(fmt.Sprintf("q%02d", i), 2<<10+i*512))
	}
	errs := appendsBehindGate(t, w, g, sized("first", 1<<10), rest, func() {})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	got := validLines(t, Path(w.dir, "alice"))
	want := []string{"first"}
	for _, e := range rest {
		want = append(want, e.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("file holds %v, want %v", got, want)
	}
	// One sync for the first entry, one for the sixteen queued behind it.
	if n := g.syncs.Load(); n != 2 {
		t.Fatalf("%d syncs for a write and one batch; want 2", n)
	}
	readBackSized(t, w, want)
}

// A batch that does not fit on a nearly full disk is cut back, and its
// entries are written one at a time: the small ones that fit are written,
// the large one that does not fails with ENOSPC, and no partial line is
// left.
func TestGroupCommitENOSPCEachAlone(t *testing.T) {
	capacity := int64(64 << 20)
	w, g := gateWriter(t, &capacity)
	rest := []Entry{sized("a", 10<<10), sized("big", 100<<10), sized("c", 10<<10)}
	errs := appendsBehindGate(t, w, g, sized("first", 1<<10), rest, func() {
		// Room for the first entry and the two small ones, not the
		// large one, nor the three as one batch.
		capacity = 2<<10 + 2*11<<10 + 20<<10
	})
	if errs[0] != nil || errs[2] != nil || errs[3] != nil {
		t.Fatalf("entries that fit alone failed: %v", errs)
	}
	if !errors.Is(errs[1], syscall.ENOSPC) {
		t.Fatalf("the entry that does not fit: %v, want ENOSPC", errs[1])
	}
	if got := validLines(t, Path(w.dir, "alice")); strings.Join(got, ",") != "first,a,c" {
		t.Fatalf("file holds %v, want first,a,c", got)
	}
	readBackSized(t, w, []string{"first", "a", "c"})
}

// A batch whose sync fails is not acknowledged and leaves nothing of
// itself: it is cut back and its entries are written (and synced) one at
// a time, each once. With the sync failing for good, every entry of the
// batch fails, none is left in the file, and the next entry is written
// once the disk recovers.
func TestGroupCommitSyncFailure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failSyncs int
		want      string
		failed    bool
	}{
		{"once", 1, "first,a,b,c,d", false},
		{"for good", 1000, "first,d", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capacity := int64(64 << 20)
			w, g := gateWriter(t, &capacity)
			rest := []Entry{sized("a", 4<<10), sized("b", 4<<10), sized("c", 4<<10)}
			errs := appendsBehindGate(t, w, g, sized("first", 1<<10), rest, func() {
				g.okSyncs, g.failSyncs = 1, tc.failSyncs // the first entry's sync succeeds
			})
			if errs[3] != nil {
				t.Fatal(errs[3])
			}
			for i, err := range errs[:3] {
				if tc.failed != (err != nil) || tc.failed && !errors.Is(err, syscall.EIO) {
					t.Fatalf("append of %s: %v", rest[i].ID, err)
				}
			}
			g.failSyncs = 0
			if err := w.Append(sized("d", 1<<10)); err != nil {
				t.Fatal(err)
			}
			if got := validLines(t, Path(w.dir, "alice")); strings.Join(got, ",") != tc.want {
				t.Fatalf("file holds %v, want %s", got, tc.want)
			}
			readBackSized(t, w, strings.Split(tc.want, ","))
		})
	}
}

// readBackSized checks that the file holds exactly the entries ids, in
// that order, each read back whole.
func readBackSized(t *testing.T, w *Writer, ids []string) {
	t.Helper()
	entries, st, err := ReadFile(Path(w.dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Malformed != 0 || len(entries) != len(ids) {
		t.Fatalf("read %d entries (%d invalid lines), want %d", len(entries), st.Malformed, len(ids))
	}
	for i, e := range entries {
		if e.ID != ids[i] || !strings.HasPrefix(string(e.Request), `"`+e.ID+"|") || len(e.Request) < 3 {
			t.Fatalf("entry %d: %s read back wrong (%d bytes)", i, e.ID, len(e.Request))
		}
	}
}

// randFile is a history file on a small disk (faultFile) whose syncs and
// truncates fail at random (a sync that succeeds is not passed on), and whose writes now and then pause, so that
// appends queue up behind them.
type randFile struct {
	*faultFile
	mu                  sync.Mutex
	r                   *rand.Rand
	pSync, pTrunc       float64
	failedTruncates     int
	failedSyncs, writes int
}

func (f *randFile) roll(p float64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.r.Float64() < p
}

func (f *randFile) Write(p []byte) (int, error) {
	if f.roll(0.1) {
		time.Sleep(50 * time.Microsecond)
	}
	return f.faultFile.Write(p)
}

func (f *randFile) Sync() error {
	if f.roll(f.pSync) {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
	}
	return nil // what is checked here does not need the disk's fsync
}

func (f *randFile) Truncate(size int64) error {
	if f.roll(f.pTrunc) {
		f.mu.Lock()
		f.failedTruncates++
		f.mu.Unlock()
		return &os.PathError{Op: "truncate", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Truncate(size)
}

// Many goroutines append to one file, in batches, on a disk that fills
// up, with syncs and truncates failing at random. Whatever happens:
//
//   - every acknowledged entry is in the file once, whole, and each
//     goroutine's acknowledged entries are in the order it appended them;
//   - every line is a whole valid entry, unless a truncate failed: then
//     at most one invalid line per failed truncate, and an entry that
//     failed may be left whole;
//   - once the faults stop, the next entry is written.
func TestGroupCommitUnderFaults(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	trials := 24
	if testing.Short() {
		trials = 6
	}
	for trial := range trials {
		mode := []SyncMode{SyncAlways, SyncNever}[r.IntN(2)]
		w, err := NewWriterWith(t.TempDir(), WriterOptions{Sync: mode})
		if err != nil {
			t.Fatal(err)
		}
		capacity := int64(50<<10 + r.IntN(600<<10))
		rf := &randFile{faultFile: &faultFile{capacity: &capacity}, r: rand.New(rand.NewPCG(seed, uint64(trial)+1))}
		rf.pSync = []float64{0, 0.2}[r.IntN(2)]
		rf.pTrunc = []float64{0, 0, 0.2}[r.IntN(3)]
		w.openFile = func(path string) (appendFile, error) {
			f, err := openAppend(path)
			if err != nil {
				return nil, err
			}
			rf.File = f.(*os.File)
			return rf, nil
		}
		sizes := make([][]int, 6)
		for g := range sizes {
			for range 6 {
				sizes[g] = append(sizes[g], 1<<10+r.IntN(40<<10))
			}
		}
		acked := make([][]string, len(sizes))
		var wg sync.WaitGroup
		for g := range sizes {
			wg.Go(func() {
				for k, n := range sizes[g] {
					id := fmt.Sprintf("g%d-k%d-%d", g, k, n)
					if err := w.Append(sized(id, n)); err == nil {
						acked[g] = append(acked[g], id)
					}
				}
			})
		}
		wg.Wait()
		rf.pSync, rf.pTrunc, capacity = 0, 0, 64<<20
		if err := w.Append(sized("end-10", 10)); err != nil {
			t.Fatalf("trial %d: the first append after the faults: %v", trial, err)
		}
		checkUnderFaults(t, trial, Path(w.dir, "alice"), acked, rf.failedTruncates)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkUnderFaults checks TestGroupCommitUnderFaults' file.
func checkUnderFaults(t *testing.T, trial int, path string, acked [][]string, failedTruncates int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("trial %d: the file does not end with a whole line", trial)
	}
	pos := map[string]int{} // line number of each entry
	invalid := 0
	for i, line := range strings.Split(string(b[:len(b)-1]), "\n") {
		var e Entry
		if json.Unmarshal([]byte(line), &e) != nil {
			invalid++
			continue
		}
		if _, dup := pos[e.ID]; dup {
			t.Fatalf("trial %d: entry %s twice", trial, e.ID)
		}
		pos[e.ID] = i
		sizeAt := strings.LastIndexByte(e.ID, '-')
		n, _ := strconv.Atoi(e.ID[sizeAt+1:])
		if string(e.Request) != string(padOf(e.ID, n)) {
			t.Fatalf("trial %d: entry %s read back corrupted", trial, e.ID)
		}
	}
	if invalid > failedTruncates {
		t.Fatalf("trial %d: %d invalid lines after %d failed truncates", trial, invalid, failedTruncates)
	}
	total := 0
	for g, ids := range acked {
		last := -1
		for _, id := range ids {
			at, ok := pos[id]
			if !ok {
				t.Fatalf("trial %d: acknowledged entry %s lost", trial, id)
			}
			if at < last {
				t.Fatalf("trial %d: goroutine %d's entries out of order", trial, g)
			}
			last = at
		}
		total += len(ids)
	}
	if failedTruncates == 0 && len(pos) != total+1 {
		t.Fatalf("trial %d: %d entries in the file, %d acknowledged (+1 after the faults)", trial, len(pos), total)
	}
}

// BenchmarkAppendConcurrent is one agent's c concurrent exchanges
// recording 200 KB requests to its one file (as the proxy hands them
// over: valid, plain): what group commit changes is how many writes and
// syncs carry them.
func BenchmarkAppendConcurrent(b *testing.B) {
	req := json.RawMessage(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor ", 200<<10/18) + `"}]}`)
	for _, mode := range []struct {
		name string
		o    WriterOptions
	}{{"interval", WriterOptions{}}, {"always", WriterOptions{Sync: SyncAlways}}} {
		for _, run := range []struct{ files, c int }{{1, 1}, {1, 8}, {1, 64}, {4, 8}, {4, 64}} {
			b.Run(fmt.Sprintf("%s/200KB/files=%d/c=%d", mode.name, run.files, run.c), func(b *testing.B) {
				o := mode.o
				o.Files = run.files
				w, err := NewWriterWith(b.TempDir(), o)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				b.SetBytes(int64(len(req)))
				var next sync.Mutex
				n := 0
				var wg sync.WaitGroup
				for range run.c {
					wg.Go(func() {
						for {
							next.Lock()
							i := n
							n++
							next.Unlock()
							if i >= b.N {
								return
							}
							e := Entry{ID: strconv.Itoa(i), AgentID: "alice", Format: "openai", Model: "p/m", StatusCode: 200,
								Request: req, BodiesValid: true, RequestPlain: true}
							if err := w.Append(e); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// blockingSyncFile is a history file whose syncs wait for release, the
// first one telling entered it has started: a disk slow to take a
// second's entries.
type blockingSyncFile struct {
	*os.File
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (f *blockingSyncFile) Sync() error {
	f.once.Do(func() { close(f.entered) })
	<-f.release
	return f.File.Sync()
}

// The background sync (SyncInterval) does not hold appends up: an entry
// is written and acknowledged while the file's fsync is still under way,
// and the file is synced again afterwards for it.
func TestIntervalSyncDoesNotHoldAppends(t *testing.T) {
	w, err := NewWriterWith(t.TempDir(), WriterOptions{SyncEvery: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	bf := &blockingSyncFile{entered: make(chan struct{}), release: make(chan struct{})}
	w.openFile = func(path string) (appendFile, error) {
		f, err := openAppend(path)
		if err != nil {
			return nil, err
		}
		bf.File = f.(*os.File)
		return bf, nil
	}
	defer w.Close()
	if err := w.Append(sized("a", 1<<10)); err != nil {
		t.Fatal(err)
	}
	<-bf.entered // the syncer is in the file's fsync, held there
	done := make(chan error, 1)
	go func() { done <- w.Append(sized("b", 1<<10)) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		close(bf.release)
		t.Fatal("an append waited for the background fsync")
	}
	if !w.isDirty("alice") {
		t.Fatal("an entry written during the sync is not marked for the next one")
	}
	close(bf.release)
	waitFor(t, func() bool { return !w.isDirty("alice") })
}

// A batch whose sync fails and which cannot be cut back (the truncate
// fails too) is left in the file whole: its entries all fail, and none is
// written a second time. (Writing them again one at a time, as a batch
// that was cut back is, recorded each twice.)
func TestGroupCommitUncutBatchIsNotWrittenTwice(t *testing.T) {
	capacity := int64(64 << 20)
	w, g := gateWriter(t, &capacity)
	rest := []Entry{sized("a", 4<<10), sized("b", 4<<10), sized("c", 4<<10)}
	errs := appendsBehindGate(t, w, g, sized("first", 1<<10), rest, func() {
		g.okSyncs, g.failSyncs = 1, 1 // the first entry's sync succeeds, the batch's fails
		g.failTruncate = syscall.EIO
	})
	if errs[3] != nil {
		t.Fatal(errs[3])
	}
	for i, err := range errs[:3] {
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("append of %s: %v, want the batch's EIO", rest[i].ID, err)
		}
	}
	g.failTruncate = nil
	if err := w.Append(sized("d", 1<<10)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range validLines(t, Path(w.dir, "alice")) {
		if seen[id]++; seen[id] > 1 {
			t.Fatalf("entry %s written twice", id)
		}
	}
	if seen["first"] != 1 || seen["d"] != 1 {
		t.Fatalf("acknowledged entries: %v", seen)
	}
}
