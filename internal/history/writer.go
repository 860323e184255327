package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// FileName is the per-agent history file under <dir>/<agent-id>/.
const FileName = "history.jsonl"

// Writer appends entries to <dir>/<agent-id>/history.jsonl. Each entry is
// written with one write(2) on a file opened O_APPEND, under a per-agent
// lock, so lines never interleave or tear even with many concurrent
// exchanges. Files are created 0600 and directories 0700: history holds
// prompts and answers. A Writer is safe for concurrent use.
type Writer struct {
	dir string

	mu    sync.Mutex
	files map[string]*agentFile
}

type agentFile struct {
	mu sync.Mutex
	f  *os.File
}

// NewWriter returns a Writer rooted at dir. It creates dir (0700) if needed.
func NewWriter(dir string) (*Writer, error) {
	if dir == "" {
		return nil, errors.New("history: empty directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &Writer{dir: dir, files: make(map[string]*agentFile)}, nil
}

// Path returns the history file of agentID under dir.
func Path(dir, agentID string) string { return filepath.Join(dir, agentID, FileName) }

// Append writes e as one line. It fills ID (a fresh random id) and Timestamp
// (now) when empty. A nil Writer discards entries, so callers need no check
// when history is disabled.
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
	// No HTML escaping: requests and responses are kept as received, and
	// escaping every '<', '>' and '&' as \u00XX could grow a line sixfold,
	// past what readers accept (MaxLineBytes).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil { // Encode ends the line with '\n'
		return fmt.Errorf("history: encode entry %s: %w", e.ID, err)
	}
	line := buf.Bytes()
	af, err := w.file(e.AgentID)
	if err != nil {
		return err
	}
	af.mu.Lock()
	defer af.mu.Unlock()
	if _, err := af.f.Write(line); err != nil {
		return fmt.Errorf("history: append to %s: %w", af.f.Name(), err)
	}
	return nil
}

// file returns the open history file of an agent, opening it once.
func (w *Writer) file(agentID string) (*agentFile, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if af := w.files[agentID]; af != nil {
		return af, nil
	}
	dir := filepath.Join(w.dir, agentID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	af := &agentFile{f: f}
	w.files[agentID] = af
	return af, nil
}

// Close closes every open file. Appends after Close reopen files.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for id, af := range w.files {
		af.mu.Lock()
		errs = append(errs, af.f.Close())
		af.mu.Unlock()
		delete(w.files, id)
	}
	return errors.Join(errs...)
}
