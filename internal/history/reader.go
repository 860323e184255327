package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/clawdapus/clawgo/internal/jsonl"
)

// MaxLineBytes bounds one history line when reading. A line can hold a
// whole request (up to cllama's body limit) and a response, so the bound is
// generous; longer lines are counted as malformed and skipped.
const MaxLineBytes = 128 << 20

// Stats counts what a read skipped.
type Stats struct {
	Lines     int // non-empty lines seen
	Malformed int // lines that were not a JSON entry, or too long
}

// Entries returns an iterator over the entries of r, oldest first. Malformed
// or over-long lines are counted in stats (when non-nil) and skipped, never
// fatal: a crash mid-write leaves at most one torn last line. The iterator
// yields a non-nil error only for a read failure, and then stops.
func Entries(r io.Reader, stats *Stats) iter.Seq2[Entry, error] {
	if stats == nil {
		stats = new(Stats)
	}
	return func(yield func(Entry, error) bool) {
		for line, err := range jsonl.Lines(r, MaxLineBytes) {
			if errors.Is(err, jsonl.ErrLineTooLong) {
				stats.Lines++
				stats.Malformed++
				continue
			}
			if err != nil {
				yield(Entry{}, fmt.Errorf("history: read: %w", err))
				return
			}
			stats.Lines++
			var e Entry
			if json.Unmarshal(line, &e) != nil || e.AgentID == "" {
				stats.Malformed++
			} else if !yield(e, nil) {
				return
			}
		}
	}
}

// ReadFile reads every well-formed entry of the history file at path. A
// missing file is an empty history, not an error.
func ReadFile(path string) ([]Entry, Stats, error) {
	var st Stats
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, st, nil
	}
	if err != nil {
		return nil, st, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var out []Entry
	for e, err := range Entries(f, &st) {
		if err != nil {
			return out, st, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, e)
	}
	return out, st, nil
}
