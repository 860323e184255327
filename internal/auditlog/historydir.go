package auditlog

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// HistoryDirStats says what reading a session-history directory found.
type HistoryDirStats struct {
	Files     int
	Entries   int
	Malformed int
	// Skipped says, per file with malformed lines, which lines were
	// skipped (the first history.MaxReported of them).
	Skipped []SkippedLines
}

// SkippedLines are the malformed lines of one history file.
type SkippedLines struct {
	Path  string
	Count int
	At    []int
}

// ReadHistoryDir reads every agent's history under dir, agents in name
// order: <agent-id>/history.jsonl and each cllama replica's
// history.<replica>.jsonl, an agent's files merged by timestamp (one
// file: oldest line first, as written). A missing directory is an
// empty history. Directories that are not agent ids (cllama's
// .continuity state) are skipped.
func ReadHistoryDir(dir string) ([]history.Entry, HistoryDirStats, error) {
	var st HistoryDirStats
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, st, nil
	}
	if err != nil {
		return nil, st, fmt.Errorf("session history: %w", err)
	}
	sort.Slice(des, func(i, j int) bool { return des[i].Name() < des[j].Name() })
	var out []history.Entry
	for _, de := range des {
		if !de.IsDir() || !manifest.ValidAgentID(de.Name()) {
			continue
		}
		// history.jsonl, and one file per cllama replica sharing the
		// directory: merged by time.
		paths, err := history.Paths(dir, de.Name())
		if err != nil {
			return nil, st, err
		}
		var agent []history.Entry
		for _, path := range paths {
			es, hs, err := readTraces(path)
			if err != nil {
				return nil, st, err
			}
			st.Files++
			st.Entries += len(es)
			st.Malformed += hs.Malformed
			if hs.Malformed > 0 {
				st.Skipped = append(st.Skipped, SkippedLines{Path: path, Count: hs.Malformed, At: hs.MalformedAt})
			}
			agent = append(agent, es...)
		}
		if len(paths) > 1 {
			sort.SliceStable(agent, func(i, j int) bool { return agent[i].Timestamp.Before(agent[j].Timestamp) })
		}
		out = append(out, agent...)
	}
	return out, st, nil
}

// readTraces reads one history file, dropping each entry's request and
// response bodies as it goes: the audit needs the trace and usage only,
// and a long history's bodies would not fit in memory together.
func readTraces(path string) ([]history.Entry, history.Stats, error) {
	var hs history.Stats
	f, err := os.Open(path)
	if err != nil {
		return nil, hs, fmt.Errorf("session history: %w", err)
	}
	defer f.Close()
	var out []history.Entry
	for e, err := range history.Entries(f, &hs) {
		if err != nil {
			return nil, hs, fmt.Errorf("%s: %w", path, err)
		}
		e.Request, e.Response = nil, nil
		out = append(out, e)
	}
	return out, hs, nil
}
