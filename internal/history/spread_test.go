package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/jsonl"
)

// heldFiles opens an agent's files as gateFiles whose first write waits
// for its gate: files[k] is the k-th file opened (its name in names).
type heldFiles struct {
	mu    sync.Mutex
	files []*gateFile
	names []string
	// opens are the gates opened (release).
	opens []sync.Once
	// fail, when set, makes every open after the first fail.
	fail bool
}

func (h *heldFiles) open(path string) (appendFile, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail && len(h.files) > 0 {
		return nil, errors.New("too many open files")
	}
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	capacity := int64(1 << 40)
	g := &gateFile{faultFile: &faultFile{File: f.(*os.File), capacity: &capacity}, entered: make(chan struct{}), gate: make(chan struct{})}
	h.files = append(h.files, g)
	h.names = append(h.names, filepath.Base(path))
	h.opens = append(h.opens, sync.Once{})
	return g, nil
}

func (h *heldFiles) file(k int) *gateFile {
	h.mu.Lock()
	defer h.mu.Unlock()
	if k >= len(h.files) {
		return nil
	}
	return h.files[k]
}

// release lets the k-th file's first write go on (every file's when k
// is negative).
func (h *heldFiles) release(k int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, g := range h.files {
		if k < 0 || i == k {
			h.opens[i].Do(func() { close(g.gate) })
		}
	}
}

func (h *heldFiles) opened() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.names)
}

func spreadWriter(t *testing.T, o WriterOptions, h *heldFiles) *Writer {
	t.Helper()
	w, err := NewWriterWith(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	t.Cleanup(func() { h.release(-1) }) // before Close, should the test stop early
	w.openFile = h.open
	return w
}

// An agent whose appends never overlap a write keeps the one file, even
// with more allowed.
func TestSpreadKeepsOneFileWithoutContention(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriterWith(dir, WriterOptions{Files: 4, Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := w.Append(Entry{ID: fmt.Sprint(i), AgentID: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Close()
	paths, err := Paths(dir, "alice")
	if err != nil || len(paths) != 1 || filepath.Base(paths[0]) != FileName {
		t.Fatalf("files %v (%v), want history.jsonl alone", paths, err)
	}
}

// An entry that arrives while every open file is being written opens the
// next file, up to Files; once all are open, it waits for the one with
// the fewest entries waiting. Every entry is written once, and the
// agent's history reads them all back in time order.
func TestSpreadOpensTheNextFileWhenEveryOneIsBusy(t *testing.T) {
	h := &heldFiles{}
	w := spreadWriter(t, WriterOptions{Files: 2, Sync: SyncAlways}, h)
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	entry := func(i int) Entry {
		return Entry{ID: fmt.Sprint(i), AgentID: "alice", Timestamp: t0.Add(time.Duration(i) * time.Second)}
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	wg.Go(func() { errs[0] = w.Append(entry(0)) })
	waitFor(t, func() bool { return h.file(0) != nil })
	<-h.file(0).entered // the first file is being written
	wg.Go(func() { errs[1] = w.Append(entry(1)) })
	waitFor(t, func() bool { return h.file(1) != nil })
	<-h.file(1).entered // so the second entry opened another
	// Both are busy and no more may be opened: the next entries wait.
	wg.Go(func() { errs[2] = w.Append(entry(2)) })
	waitFor(t, func() bool { return w.waiting() == 1 })
	wg.Go(func() { errs[3] = w.Append(entry(3)) })
	waitFor(t, func() bool { return w.waiting() == 2 })
	if got := h.opened(); !slices.Equal(got, []string{"history.jsonl", "history+1.jsonl"}) {
		t.Fatalf("opened %v", got)
	}
	h.release(0)
	h.release(1)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	// One entry waited on each file (the fewest waiting).
	for _, name := range []string{"history.jsonl", "history+1.jsonl"} {
		if n := len(validLines(t, filepath.Join(w.dir, "alice", name))); n != 2 {
			t.Errorf("%s holds %d entries, want 2", name, n)
		}
	}
	es, files, err := ReadAgent(w.dir, "alice")
	if err != nil || len(files) != 2 {
		t.Fatalf("read %v: %v", files, err)
	}
	if got := ids(es); !slices.Equal(got, []string{"0", "1", "2", "3"}) {
		t.Fatalf("read back %v, want 0 1 2 3 once each in time order", got)
	}
}

// waiting is how many of alice's entries wait for one of her files.
func (w *Writer) waiting() int {
	w.mu.Lock()
	fs := w.files["alice"]
	w.mu.Unlock()
	if fs == nil {
		return 0
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, af := range fs.open {
		af.qmu.Lock()
		n += len(af.queue)
		af.qmu.Unlock()
	}
	return n
}

// A further file that cannot be opened costs no entry: it goes to a file
// already open, and the agent's entries stay in those.
func TestSpreadFallsBackWhenAFileCannotBeOpened(t *testing.T) {
	h := &heldFiles{fail: true}
	w := spreadWriter(t, WriterOptions{Files: 4, Sync: SyncNever}, h)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	wg.Go(func() { errs[0] = w.Append(Entry{ID: "0", AgentID: "alice"}) })
	waitFor(t, func() bool { return h.file(0) != nil })
	<-h.file(0).entered
	wg.Go(func() { errs[1] = w.Append(Entry{ID: "1", AgentID: "alice"}) })
	waitFor(t, func() bool { return w.waiting() == 1 })
	wg.Go(func() { errs[2] = w.Append(Entry{ID: "2", AgentID: "alice"}) })
	waitFor(t, func() bool { return w.waiting() == 2 })
	h.release(0)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if n := len(validLines(t, Path(w.dir, "alice"))); n != 3 {
		t.Fatalf("history.jsonl holds %d entries, want 3", n)
	}
}

// A further file a crash left with a partial last line is cut when it is
// opened, and the cut reported, as the first file's is.
func TestSpreadRepairsEachFile(t *testing.T) {
	dir := t.TempDir()
	torn := filepath.Join(dir, "alice", FileNameOf("r0", 1))
	if err := os.MkdirAll(filepath.Dir(torn), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(torn, []byte(`{"id":"kept","agent_id":"alice"}`+"\n"+`{"id":"cut`), 0o600); err != nil {
		t.Fatal(err)
	}
	var cuts []jsonl.Cut
	var mu sync.Mutex
	w, err := NewWriterWith(dir, WriterOptions{Replica: "r0", Files: 2, Sync: SyncNever, OnRepair: func(_ string, c jsonl.Cut) {
		mu.Lock()
		cuts = append(cuts, c)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h := &heldFiles{}
	defer h.release(-1)
	w.openFile = h.open
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Append(Entry{ID: "a", AgentID: "alice"}) })
	waitFor(t, func() bool { return h.file(0) != nil })
	<-h.file(0).entered
	wg.Go(func() { _ = w.Append(Entry{ID: "b", AgentID: "alice"}) })
	waitFor(t, func() bool { return h.file(1) != nil })
	<-h.file(1).entered // b is being written to the repaired file
	h.release(0)
	h.release(1)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(cuts) != 1 || cuts[0].Path != torn || cuts[0].Bytes != int64(len(`{"id":"cut`)) {
		t.Fatalf("cuts %+v, want the torn line of %s", cuts, torn)
	}
	if got := validLines(t, torn); len(got) != 2 {
		t.Fatalf("%s: %q", torn, got)
	}
}

// Readers find every file a Writer names and nothing else.
func TestPathsFindEveryFileAWriterNames(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "alice")
	if err := os.MkdirAll(agent, 0o700); err != nil {
		t.Fatal(err)
	}
	written := []string{FileNameOf("", 0), FileNameOf("", 1), FileNameOf("r-0", 0), FileNameOf("r-0", 12), FileNameOf("a.b", 3)}
	if want := []string{"history.jsonl", "history+1.jsonl", "history.r-0.jsonl", "history.r-0+12.jsonl", "history.a.b+3.jsonl"}; !slices.Equal(written, want) {
		t.Fatalf("names %v, want %v", written, want)
	}
	other := []string{"history.jsonl.bak", "history+0.jsonl", "history+01.jsonl", "history+.jsonl", "history.a b.jsonl", "history..jsonl", "notes.jsonl", "history.r+1+2.jsonl"}
	for _, n := range append(slices.Clone(written), other...) {
		if err := os.WriteFile(filepath.Join(agent, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := Paths(dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range paths {
		got = append(got, filepath.Base(p))
	}
	slices.Sort(written)
	if !slices.Equal(got, written) {
		t.Fatalf("Paths found %v, want %v", got, written)
	}
}

// FuzzIsFileName holds isFileName to the pattern of the names FileNameOf
// makes, and parseFileName to FileNameOf's inverse.
func FuzzIsFileName(f *testing.F) {
	pattern := regexp.MustCompile(`^history(\.[a-zA-Z0-9_.-]{1,64})?(\+[1-9][0-9]{0,3})?\.jsonl$`)
	for _, s := range []string{"history.jsonl", "history+1.jsonl", "history.r0+12.jsonl", "history+0.jsonl", "history.+1.jsonl",
		"history.jsonl.jsonl", "history." + strings.Repeat("a", 65) + ".jsonl", "history+99999.jsonl", "history+1+2.jsonl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isFileName(s), pattern.MatchString(s); got != want {
			t.Fatalf("isFileName(%q) = %v, the pattern says %v", s, got, want)
		}
		if replica, k, ok := parseFileName(s); ok && FileNameOf(replica, k) != s {
			t.Fatalf("parseFileName(%q) = %q, %d: FileNameOf gives %q", s, replica, k, FileNameOf(replica, k))
		}
	})
}

// The further files an earlier run spread an agent over are repaired when
// the agent's first entry opens its files, with or without load: those
// this Writer may use are kept open, one beyond its Files is repaired and
// left alone.
func TestSpreadRepairsEveryFileOnFirstUse(t *testing.T) {
	dir := t.TempDir()
	torn := map[string]string{
		FileNameOf("", 1):   `{"id":"a","agent_id":"alice"}` + "\n" + `{"id":"cut`,
		FileNameOf("", 3):   `{"id":"b","agent_id":"alice"}` + "\n" + `{"id":"cut too`,
		FileNameOf("r0", 1): `{"id":"c","agent_id":"alice"}` + "\n" + `{"id":"another replica's`,
	}
	for name, content := range torn {
		p := filepath.Join(dir, "alice", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var cut []string
	w, err := NewWriterWith(dir, WriterOptions{Files: 2, Sync: SyncNever, OnRepair: func(_ string, c jsonl.Cut) { cut = append(cut, filepath.Base(c.Path)) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(Entry{ID: "new", AgentID: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got := w.openCount("alice"); got != 2 {
		t.Errorf("%d files open, want history.jsonl and history+1.jsonl", got)
	}
	_ = w.Close()
	slices.Sort(cut)
	if want := []string{"history+1.jsonl", "history+3.jsonl"}; !slices.Equal(cut, want) {
		t.Fatalf("cut %v, want %v (another replica's file is its own)", cut, want)
	}
	for name, want := range map[string]int{FileNameOf("", 0): 1, FileNameOf("", 1): 1, FileNameOf("", 3): 1} {
		if got := validLines(t, filepath.Join(dir, "alice", name)); len(got) != want {
			t.Errorf("%s: %q", name, got)
		}
	}
}

// openCount is how many files of agent the Writer has open.
func (w *Writer) openCount(agent string) int {
	w.mu.Lock()
	fs := w.files[agent]
	w.mu.Unlock()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.open)
}
