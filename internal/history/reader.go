package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"sort"
	"strconv"
	"strings"

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
	// MalformedAt holds the 1-based numbers of the first MaxReported
	// malformed lines, so a report can point at them.
	MalformedAt []int
}

// MaxReported bounds Stats.MalformedAt.
const MaxReported = 10

func (st *Stats) malformed(line int) {
	st.Malformed++
	if len(st.MalformedAt) < MaxReported {
		st.MalformedAt = append(st.MalformedAt, line)
	}
}

// LineList renders line numbers for a warning: "3, 17 and 40", or "3, 17,
// ... (12 in all)" when only the first were kept.
func LineList(at []int, total int) string {
	parts := make([]string, len(at))
	for i, n := range at {
		parts[i] = strconv.Itoa(n)
	}
	switch {
	case total > len(at):
		return strings.Join(parts, ", ") + fmt.Sprintf(", ... (%d in all)", total)
	case len(parts) > 1:
		return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return strings.Join(parts, "")
}

// Entries returns an iterator over the entries of r, oldest first. Malformed
// or over-long lines are counted in stats (when non-nil) and skipped, never
// fatal: the Writer leaves whole lines only, but a file may hold an invalid
// one (a write torn by a crash that an earlier version ended with a
// newline, a partial last line no Writer has cut yet, damage), and the
// entries after it still read. The iterator yields a non-nil error only
// for a read failure, and then stops.
func Entries(r io.Reader, stats *Stats) iter.Seq2[Entry, error] {
	if stats == nil {
		stats = new(Stats)
	}
	return func(yield func(Entry, error) bool) {
		for line, err := range jsonl.Numbered(r, MaxLineBytes) {
			if errors.Is(err, jsonl.ErrLineTooLong) {
				stats.Lines++
				stats.malformed(line.Number)
				continue
			}
			if err != nil {
				yield(Entry{}, fmt.Errorf("history: read: %w", err))
				return
			}
			stats.Lines++
			var e Entry
			if json.Unmarshal(line.Text, &e) != nil || e.AgentID == "" {
				stats.malformed(line.Number)
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

// FileStats is what reading one of an agent's history files found.
type FileStats struct {
	Path string
	Stats
}

// ReadAgent reads every history file of an agent under dir (Paths):
// history.jsonl and each replica's, their entries merged oldest first
// (entries of one time keep their file order; a single file is returned
// in its own order). It says what it found in each file it read.
func ReadAgent(dir, agentID string) ([]Entry, []FileStats, error) {
	paths, err := Paths(dir, agentID)
	if err != nil {
		return nil, nil, err
	}
	var (
		out   []Entry
		files []FileStats
	)
	for _, p := range paths {
		es, s, err := ReadFile(p)
		files = append(files, FileStats{Path: p, Stats: s})
		if err != nil {
			return nil, files, err
		}
		out = append(out, es...)
	}
	if len(paths) > 1 {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	}
	return out, files, nil
}
