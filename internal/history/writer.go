package history

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/jsonl"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// FileName is the per-agent history file under <dir>/<agent-id>/.
const FileName = "history.jsonl"

// Writer appends entries to <dir>/<agent-id>/history.jsonl, one line each
// (and to history+1.jsonl, … when an agent's entries come faster than one
// file takes them: WriterOptions.Files).
// Files are created 0600 and directories 0700: history holds prompts and
// answers. A Writer is safe for concurrent use; one Writer (one process)
// owns a history directory.
//
// What an acknowledged entry (Append returned nil) survives:
//
//   - Concurrent appends: entries to one file are written by one
//     goroutine at a time, each entry whole, so lines never interleave.
//     Appends that arrive while a write is under way are committed
//     together (group commit): whoever writes next takes every entry
//     waiting and writes them in one writev(2), in the order they came,
//     with one fsync for all under SyncAlways. Each Append still returns
//     only once its own line is written (and synced): a batch changes how
//     many system calls carry the entries, not what an acknowledgement
//     means. One agent's concurrent exchanges then cost the file one
//     write per batch instead of one lock hand-over and write per entry.
//   - A failed write (ENOSPC, EIO, a failed sync): Append cuts the file
//     back to where the entry began before it returns the error, so the
//     next entry starts on a fresh line and no partial line is left. If
//     even that fails, the next Append first ends the torn line with a
//     newline (or fails without writing). A batch that fails is cut back
//     to where it began, and its entries are then written one at a time
//     as above: each gets the outcome it would have had alone (an entry
//     that fits on a nearly full disk is written, the next one is not),
//     and no partial entry is left. If the batch cannot be cut back, every
//     entry of it fails, so none is written twice.
//   - A process crash (kill -9, OOM kill, panic): the write(2) of an
//     acknowledged entry has completed, so the kernel has it. A write cut
//     short by the crash leaves at most one partial last line per file,
//     never acknowledged; the next Writer to open the file cuts it off
//     (jsonl.CutTornTail: the file is truncated after its last newline)
//     before appending, and reports the cut (WriterOptions.OnRepair;
//     cllama logs a file_repaired audit event). Every line stays valid
//     JSON, and no acknowledged entry is lost with the cut. A Writer holds
//     its files locked shared (flock(2)) while it has them open, and
//     cuts only a file no other Writer has open: two processes appending
//     to one file (no replica ids) never cut each other's write in
//     progress; the second ends the last line with a newline instead, as
//     the kernel appends it after that write.
//   - A power loss or kernel crash: with SyncAlways, Append returns only
//     after fsync(2), so acknowledged entries are on stable storage. With
//     the default SyncInterval, files that changed are fsync'ed in the
//     background at least once per interval (default one second), so at
//     most the last interval's entries may be lost, without adding an
//     fsync to every exchange; with SyncNever the kernel decides. A
//     partial tail left by such a loss is cut off by the next open as
//     above; earlier entries are not affected.
//
// Files written by earlier versions may hold an invalid line in their
// middle (a torn line those versions ended with a newline); readers
// (Entries) count and skip it, and the entries after it read as usual.
type Writer struct {
	dir  string
	opts WriterOptions
	// openFile opens an agent's file for reading and appending; tests
	// replace it to inject faults.
	openFile func(path string) (appendFile, error)

	mu    sync.Mutex
	files map[string]*agentFiles
	// stop ends the background syncer (SyncInterval); done is closed when
	// it has.
	stop, done chan struct{}
}

// SyncMode is when appended entries are fsync'ed.
type SyncMode int

const (
	// SyncInterval fsyncs the files that changed in the background, at
	// least once per WriterOptions.SyncEvery. It is the default.
	SyncInterval SyncMode = iota
	// SyncAlways fsyncs before Append returns.
	SyncAlways
	// SyncNever leaves writing back to the kernel.
	SyncNever
)

// DefaultSyncEvery is SyncInterval's default interval.
const DefaultSyncEvery = time.Second

// WriterOptions configure a Writer. The zero value gives the defaults.
type WriterOptions struct {
	// Sync is when entries reach stable storage (default SyncInterval).
	// Whatever it is, an acknowledged entry survives a crash of the
	// process; it decides what survives a crash of the machine, at the
	// cost of one fsync per append for SyncAlways (see BenchmarkAppend).
	Sync SyncMode
	// SyncEvery is SyncInterval's interval (default DefaultSyncEvery).
	SyncEvery time.Duration
	// OnSyncError is told about a failed background sync (SyncInterval);
	// the file stays marked and is synced again at the next interval.
	OnSyncError func(error)
	// Replica, when set, names this writer's files history.<replica>.jsonl:
	// cllama replicas sharing one history directory never write the same
	// file (readers merge them; see Paths).
	Replica string
	// Files is how many files one agent's entries may be spread over
	// (default 1). The kernel writes to one file one write at a time, so
	// one file bounds an agent's history to what one core copies into the
	// page cache; with more, an entry that arrives while every open file
	// is being written opens the next (history+1.jsonl, history+2.jsonl,
	// …; history.<replica>+1.jsonl for a replica), up to Files. An agent
	// whose appends never overlap a write keeps one file. Readers merge
	// them (Paths, ReadAgent).
	Files int
	// OnRepair is told when opening an agent's file cut a partial last
	// line off it (a write a crash cut short), before the file is
	// appended to.
	OnRepair func(agentID string, cut jsonl.Cut)
}

// ParseSync reads a sync setting as cllama's configuration spells it:
// "always", "never", or an interval such as "1s" (SyncInterval).
func ParseSync(s string) (WriterOptions, error) {
	switch s {
	case "always":
		return WriterOptions{Sync: SyncAlways}, nil
	case "never":
		return WriterOptions{Sync: SyncNever}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return WriterOptions{}, fmt.Errorf("%q is not always, never or a positive interval such as 1s", s)
	}
	return WriterOptions{Sync: SyncInterval, SyncEvery: d}, nil
}

// appendFile is what a Writer needs of an open history file (*os.File
// opened O_RDWR|O_APPEND).
type appendFile interface {
	io.Writer
	io.ReaderAt
	Truncate(size int64) error
	Sync() error
	Stat() (os.FileInfo, error)
	Close() error
	Name() string
}

type agentFile struct {
	// qmu guards queue and writing: the entries waiting to be written,
	// oldest first, and whether a goroutine is writing (the leader; it
	// takes the queue when it is done with the batch it has, or hands
	// over to the oldest waiting entry's goroutine).
	qmu     sync.Mutex
	queue   []*line
	writing bool
	// batch and iov are the leader's, reused from one batch to the next.
	batch []*line
	iov   net.Buffers

	// mu guards the file and the fields below: held by the leader while
	// it writes, by the background syncer and by Close.
	mu    sync.Mutex
	f     appendFile
	agent string
	// size is where the next entry starts: the file ends with a whole line
	// (or is empty) at this offset, unless torn is set; -1 when unknown.
	size int64
	// torn is set when a failed write could not be cut back: the file may
	// end in a partial line that must be ended before the next entry.
	torn bool
	// dirty is set when entries were written since the last fsync.
	dirty bool
}

// NewWriter returns a Writer rooted at dir with the default options. It
// creates dir (0700) if needed.
func NewWriter(dir string) (*Writer, error) { return NewWriterWith(dir, WriterOptions{}) }

// NewWriterWith returns a Writer rooted at dir configured by o. It creates
// dir (0700) if needed.
func NewWriterWith(dir string, o WriterOptions) (*Writer, error) {
	if dir == "" {
		return nil, errors.New("history: empty directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = DefaultSyncEvery
	}
	if o.Replica != "" && !validReplica(o.Replica) {
		return nil, fmt.Errorf("history: replica id %q: use 1-64 letters, digits, '.', '_' or '-'", o.Replica)
	}
	if o.Files <= 0 {
		o.Files = 1
	}
	w := &Writer{dir: dir, opts: o, openFile: openAppend, files: make(map[string]*agentFiles)}
	if o.Sync == SyncInterval {
		w.stop, w.done = make(chan struct{}), make(chan struct{})
		go w.syncLoop()
	}
	return w, nil
}

// syncLoop fsyncs the files that changed, once per interval, until Close.
func (w *Writer) syncLoop() {
	defer close(w.done)
	t := time.NewTicker(w.opts.SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			if err := w.syncDirty(); err != nil && w.opts.OnSyncError != nil {
				w.opts.OnSyncError(err)
			}
		}
	}
}

// syncDirty fsyncs every file written since its last fsync. The fsync
// runs without the file's lock: it may take as long as the disk needs to
// take a second's entries, and appends go on meanwhile (one that comes
// during it marks the file again, for the next interval).
func (w *Writer) syncDirty() error {
	files := w.openFiles()
	var errs []error
	for _, af := range files {
		af.mu.Lock()
		dirty := af.dirty
		af.dirty = false
		af.mu.Unlock()
		if !dirty {
			continue
		}
		if err := af.f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("history: sync %s: %w", af.f.Name(), err))
			af.mu.Lock()
			af.dirty = true
			af.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// Append writes e as one line. It fills ID (a fresh random id) and Timestamp
// (now) when empty. It returns nil only once the whole line is written (and,
// with SyncAlways, synced); on an error nothing of the entry is left in the
// file, or at worst a partial line that the next Append ends first. A nil
// Writer discards entries, so callers need no check when history is
// disabled.
func (w *Writer) Append(e Entry) error {
	if w == nil {
		return nil
	}
	if !manifest.ValidAgentID(e.AgentID) {
		return fmt.Errorf("history: invalid agent id %q", e.AgentID)
	}
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = time.Now().UTC()
	}
	if e.Status == "" {
		e.Status = StatusOK
	}
	l, err := encodeParts(e)
	if err != nil {
		return err
	}
	defer l.release()
	for _, p := range l.parts {
		l.n += int64(len(p))
	}
	af, err := w.pick(e.AgentID)
	if err != nil {
		return err
	}
	return af.append(w, l)
}

// append has l written to af's file, with the entries waiting beside it,
// and returns its outcome. The first goroutine to find no write under
// way leads: it writes batches of what is queued until its own entry is
// written, wakes the goroutines whose entries it wrote, and hands the
// lead to the oldest entry still waiting. Every other goroutine waits to
// be woken, either with its entry written or to lead.
func (af *agentFile) append(w *Writer, l *line) error {
	af.qmu.Lock()
	af.queue = append(af.queue, l)
	lead := !af.writing
	af.writing = true
	af.qmu.Unlock()
	if !lead {
		<-l.wake
		if l.done {
			return l.err
		}
	}
	for !l.done {
		batch := af.take()
		af.mu.Lock()
		af.commit(w, batch)
		af.mu.Unlock()
		for i, o := range batch {
			batch[i] = nil
			if o != l {
				o.wake <- struct{}{} // o's goroutine returns; o is not touched again
			}
		}
	}
	af.qmu.Lock()
	if len(af.queue) == 0 {
		af.writing = false
		af.qmu.Unlock()
		return l.err
	}
	next := af.queue[0]
	af.qmu.Unlock()
	next.wake <- struct{}{} // no one else takes it: this goroutine still leads
	return l.err
}

// take removes the oldest waiting entries from the queue, as many as one
// writev(2) carries, and returns them (af.batch, reused).
func (af *agentFile) take() []*line {
	af.qmu.Lock()
	defer af.qmu.Unlock()
	k, parts := 0, 0
	for k < len(af.queue) && (k == 0 || parts+len(af.queue[k].parts) <= maxIOV) {
		parts += len(af.queue[k].parts)
		k++
	}
	af.batch = append(af.batch[:0], af.queue[:k]...)
	rest := copy(af.queue, af.queue[k:])
	clear(af.queue[rest:])
	af.queue = af.queue[:rest]
	return af.batch
}

// commit writes a batch of entries and sets each one's outcome. A batch
// that fails is cut back to where it began (write does), and its entries
// are written again one at a time: each then gets the outcome it would
// have had alone. If the cut fails, they all fail with the batch (none is
// written twice). af.mu is held.
func (af *agentFile) commit(w *Writer, batch []*line) {
	iov := af.iov[:0]
	var n int64
	for _, l := range batch {
		iov = append(iov, l.parts...)
		n += l.n
	}
	// iov is a copy of the parts: writing consumes it.
	err := af.write(w, iov, n)
	// Entries are written again one at a time only when the failed batch
	// was cut back: if the cut failed (the file is torn), the batch's
	// lines may be in the file whole, and writing them again would record
	// them twice; each gets the batch's error, as one entry alone would.
	if err == nil || len(batch) == 1 || af.torn {
		for _, l := range batch {
			l.err, l.done = err, true
		}
	} else {
		for _, l := range batch {
			one := append(iov[len(iov):], l.parts...)
			l.err, l.done = af.write(w, one, l.n), true
			clear(one)
		}
	}
	clear(iov) // the bodies are not kept past their entries
	af.iov = iov[:0]
}

// write writes one entry's parts, or a batch's, as one writev(2), synced
// under SyncAlways. On a failure it cuts the file back to where the
// write began, so no part of it is left (or, failing that, marks the file
// torn, to be ended before the next write). af.mu is held.
func (af *agentFile) write(w *Writer, iov net.Buffers, n int64) error {
	if af.torn {
		if err := af.endTornLine(w.opts.OnRepair); err != nil {
			return fmt.Errorf("history: append to %s: %w", af.f.Name(), err)
		}
	}
	// Under the file's lock no other entry of this process comes between
	// the parts, and a failure part-way is undone below like any.
	err := writeParts(af.f, iov)
	if err == nil && w.opts.Sync == SyncAlways {
		err = af.f.Sync()
	}
	if err != nil {
		// Not acknowledged: remove whatever part reached the file, so
		// the next entry starts on a fresh line.
		if terr := af.f.Truncate(af.size); terr != nil {
			af.torn = true
		}
		return fmt.Errorf("history: append to %s: %w", af.f.Name(), err)
	}
	af.size += n
	af.dirty = w.opts.Sync == SyncInterval
	return nil
}

// endTornLine makes the file end with a whole line again after a failed
// write that could not be cut back, or a file whose partial last line
// could not be cut when it was opened: first by cutting it back again to
// where the next entry starts, or to after its last newline (reported to
// onRepair), else, as a last resort, by ending the partial line with a
// newline (it then stays one invalid line that readers skip and count).
// af.mu is held.
func (af *agentFile) endTornLine(onRepair func(string, jsonl.Cut)) error {
	if af.size >= 0 && af.f.Truncate(af.size) == nil {
		af.torn = false
		return nil
	}
	if af.size < 0 {
		if cut, err := af.repairTail(); err == nil {
			if cut.Bytes > 0 && onRepair != nil {
				onRepair(af.agent, cut)
			}
			af.size, af.torn = cut.Offset, false
			return nil
		}
	}
	size, err := terminate(af.f)
	if err != nil {
		return fmt.Errorf("cannot end a torn line: %w", err)
	}
	af.size, af.torn = size, false
	return nil
}

// repairTail makes af's file end with a whole line before its first
// entry: it cuts off a partial last line (a write a crash cut short) when
// no other Writer has the file open. When one has (two processes sharing
// a file, which replica ids avoid), the last line may be its write in
// progress: it is ended with a newline instead, which the kernel appends
// after that write, so it is never cut. The file is left locked shared,
// telling the next Writer it is not alone.
func (af *agentFile) repairTail() (jsonl.Cut, error) {
	defer lockShared(af.f)
	if lockAlone(af.f) {
		return jsonl.CutTornTail(af.f)
	}
	size, err := terminate(af.f)
	return jsonl.Cut{Path: af.f.Name(), Offset: size}, err
}

// terminate ends f with a newline unless it is empty or already ends with
// one, and returns its size.
func terminate(f appendFile) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return 0, err
	}
	return size + 1, nil
}

// Close fsyncs what the background syncer has not yet (SyncInterval) and
// closes every open file. Appends after Close reopen files but are no
// longer synced in the background.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	var errs []error
	if w.stop != nil {
		select {
		case <-w.stop:
		default:
			close(w.stop)
			<-w.done
			errs = append(errs, w.syncDirty())
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, fs := range w.files {
		fs.mu.Lock()
		for _, af := range fs.open {
			af.mu.Lock()
			errs = append(errs, af.f.Close())
			af.mu.Unlock()
		}
		fs.mu.Unlock()
		delete(w.files, id)
	}
	return errors.Join(errs...)
}
