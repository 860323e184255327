package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/clawdapus/clawgo/internal/jsonl"
)

// An agent's history files: their names, which one an entry goes to
// (WriterOptions.Files), opening them, and finding them to read.

// agentFiles are the open files of one agent, the first one first.
type agentFiles struct {
	// mu guards open and spread (Writer.pick).
	mu   sync.Mutex
	open []*agentFile
	// spread is cleared when a further file could not be opened: the
	// agent's entries stay in the files it has.
	spread bool
}

// openFiles lists every file the Writer has open.
func (w *Writer) openFiles() []*agentFile {
	w.mu.Lock()
	agents := make([]*agentFiles, 0, len(w.files))
	for _, fs := range w.files {
		agents = append(agents, fs)
	}
	w.mu.Unlock()
	var files []*agentFile
	for _, fs := range agents {
		fs.mu.Lock()
		files = append(files, fs.open...)
		fs.mu.Unlock()
	}
	return files
}

func openAppend(path string) (appendFile, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
}

// Path returns the history file of agentID under dir.
func Path(dir, agentID string) string { return filepath.Join(dir, agentID, FileName) }

// validReplica reports whether id may be a replica id (it is part of a
// file name): ^[a-zA-Z0-9_.-]{1,64}$, as a loop rather than a regexp
// compiled as cllama starts (the fuzz test holds it to the pattern).
func validReplica(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// ReplicaFileName is a replica's (first) history file name.
func ReplicaFileName(replica string) string { return FileNameOf(replica, 0) }

// isFileName reports whether n is the name of a history file a Writer
// writes (FileNameOf): history[.<replica>][+<k>].jsonl.
func isFileName(n string) bool {
	_, _, ok := parseFileName(n)
	return ok
}

// parseFileName reads the replica and the number of a history file's name
// (FileNameOf's inverse); ok is false for any other name.
func parseFileName(n string) (replica string, k int, ok bool) {
	mid, ok := strings.CutPrefix(n, "history")
	if !ok {
		return "", 0, false
	}
	if mid, ok = strings.CutSuffix(mid, ".jsonl"); !ok {
		return "", 0, false
	}
	if i := strings.LastIndexByte(mid, '+'); i >= 0 {
		num := mid[i+1:]
		if num == "" || num[0] == '0' || len(num) > 4 || strings.Trim(num, "0123456789") != "" {
			return "", 0, false
		}
		k, _ = strconv.Atoi(num)
		mid = mid[:i]
	}
	if mid == "" {
		return "", k, true
	}
	replica, ok = strings.CutPrefix(mid, ".")
	if !ok || !validReplica(replica) {
		return "", 0, false
	}
	return replica, k, true
}

// Paths are an agent's history files under dir: history.jsonl and every
// replica's history.<replica>.jsonl, each with the further files an agent's
// entries were spread over (WriterOptions.Files), sorted; none when it has
// none.
func Paths(dir, agentID string) ([]string, error) {
	des, err := os.ReadDir(filepath.Join(dir, agentID))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var out []string
	for _, de := range des {
		n := de.Name()
		if de.Type().IsRegular() && isFileName(n) {
			out = append(out, filepath.Join(dir, agentID, n))
		}
	}
	sort.Strings(out)
	return out, nil
}

// file returns the first history file of an agent, opening it once. A
// file left with a partial last line (a crash mid-write) has it cut off
// first, so the next entry starts on a line of its own; the cut is
// reported to OnRepair.
func (w *Writer) file(agentID string) (*agentFile, error) {
	fs, err := w.agent(agentID)
	if err != nil {
		return nil, err
	}
	return fs.open[0], nil
}

// agent returns an agent's files, opening its first one once. The
// further files an earlier run spread the agent's entries over are opened
// with it, so a partial last line a crash left in any of them is cut (and
// reported) then, not only once the agent's load opens that file again;
// those this Writer may use stay open as its files, the others (Files
// was larger before) are closed once repaired. One that cannot be opened
// is left until pick opens it.
func (w *Writer) agent(agentID string) (*agentFiles, error) {
	w.mu.Lock()
	fs := w.files[agentID]
	if fs != nil {
		w.mu.Unlock()
		return fs, nil
	}
	af, cut, err := w.open(agentID, 0)
	if err != nil {
		w.mu.Unlock()
		w.repaired(agentID, cut)
		return nil, err
	}
	fs = &agentFiles{open: []*agentFile{af}, spread: w.opts.Files > 1}
	cuts := []jsonl.Cut{cut}
	for _, k := range w.spreadFiles(agentID) {
		more, cut, err := w.open(agentID, k)
		cuts = append(cuts, cut)
		switch {
		case err != nil:
		case k == len(fs.open) && k < w.opts.Files:
			fs.open = append(fs.open, more)
		default:
			_ = more.f.Close()
		}
	}
	w.files[agentID] = fs
	w.mu.Unlock()
	for _, c := range cuts {
		w.repaired(agentID, c)
	}
	return fs, nil
}

// spreadFiles are the numbers (1 and up, in order) of the further files
// of agentID that this Writer's name (its replica's) has on disk.
func (w *Writer) spreadFiles(agentID string) []int {
	des, err := os.ReadDir(filepath.Join(w.dir, agentID))
	if err != nil {
		return nil
	}
	var ks []int
	for _, de := range des {
		if replica, k, ok := parseFileName(de.Name()); ok && k > 0 && replica == w.opts.Replica && de.Type().IsRegular() {
			ks = append(ks, k)
		}
	}
	sort.Ints(ks)
	return ks
}

// pick returns the file an entry of agentID goes to: with one file, that
// one. With more allowed (WriterOptions.Files), the first open file no
// entry is being written to; when every one is being written, the next
// file, opened now; when all allowed are open, the one with the fewest
// entries waiting.
func (w *Writer) pick(agentID string) (*agentFile, error) {
	fs, err := w.agent(agentID)
	if err != nil {
		return nil, err
	}
	if w.opts.Files == 1 {
		return fs.open[0], nil
	}
	fs.mu.Lock()
	var best *agentFile
	fewest := 0
	for _, af := range fs.open {
		af.qmu.Lock()
		writing, waiting := af.writing, len(af.queue)
		af.qmu.Unlock()
		if !writing {
			fs.mu.Unlock()
			return af, nil
		}
		if best == nil || waiting < fewest {
			best, fewest = af, waiting
		}
	}
	if !fs.spread || len(fs.open) >= w.opts.Files {
		fs.mu.Unlock()
		return best, nil
	}
	// Appenders of this agent wait for the open (once per file): the
	// next one to find every file busy would otherwise open it too.
	af, cut, err := w.open(agentID, len(fs.open))
	if err != nil {
		// The entry goes to a file already open; the agent's entries
		// stay in those (an error here would lose it for nothing).
		fs.spread = false
		af = best
	} else {
		fs.open = append(fs.open, af)
	}
	fs.mu.Unlock()
	w.repaired(agentID, cut)
	return af, nil
}

// Files is how many files one agent's entries may be spread over
// (WriterOptions.Files); 0 for a nil Writer.
func (w *Writer) Files() int {
	if w == nil {
		return 0
	}
	return w.opts.Files
}

// repaired reports a cut that opening a file made.
func (w *Writer) repaired(agentID string, cut jsonl.Cut) {
	if cut.Bytes > 0 && w.opts.OnRepair != nil {
		w.opts.OnRepair(agentID, cut)
	}
}

// FileNameOf is the name of the history file of replica (empty: none)
// numbered k among one agent's files (k from 0; see WriterOptions.Files).
func FileNameOf(replica string, k int) string {
	base := "history"
	if replica != "" {
		base += "." + replica
	}
	if k > 0 {
		base += "+" + strconv.Itoa(k)
	}
	return base + ".jsonl"
}

// open opens an agent's file numbered k, returning what opening it cut
// (even when it then fails).
func (w *Writer) open(agentID string, k int) (*agentFile, jsonl.Cut, error) {
	dir := filepath.Join(w.dir, agentID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, jsonl.Cut{}, fmt.Errorf("history: %w", err)
	}
	f, err := w.openFile(filepath.Join(dir, FileNameOf(w.opts.Replica, k)))
	if err != nil {
		return nil, jsonl.Cut{}, fmt.Errorf("history: %w", err)
	}
	af := &agentFile{f: f, agent: agentID}
	cut, err := af.repairTail()
	if err != nil {
		// Retried before the first entry is written.
		cut, af.size, af.torn = jsonl.Cut{}, -1, true
	} else {
		af.size = cut.Offset
	}
	if w.opts.Sync != SyncNever {
		// A new file (and a new agent directory) must survive a power
		// loss too: sync the directories that name them.
		if err := syncDirs(dir, w.dir); err != nil {
			_ = f.Close()
			return nil, cut, fmt.Errorf("history: %w", err)
		}
	}
	return af, cut, nil
}

// syncDirs fsyncs each directory.
func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		f, err := os.Open(d)
		if err != nil {
			return err
		}
		err = f.Sync()
		_ = f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
