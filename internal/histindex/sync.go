package histindex

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// maxAgents bounds the agent directories one Sync reads.
const maxAgents = 10_000

// batch is how many entries one write transaction holds.
const batch = 5000

// SyncStats says what a Sync did.
type SyncStats struct {
	Files     int // history files looked at
	Entries   int // entries added
	Malformed int // lines skipped (not an entry, or too long)
	Reset     int // files indexed again from their start (replaced or cut)
	Pruned    int // oldest entries dropped past MaxEntries
}

// Sync indexes the complete lines the history files gained since the last
// Sync. A file that shrank or was replaced is indexed again from its start.
func (x *Index) Sync(ctx context.Context) (st SyncStats, err error) {
	x.sync.Lock()
	defer x.sync.Unlock()
	des, err := os.ReadDir(x.opts.HistoryDir)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("histindex: %w", err)
	}
	// A first build loads every entry: the secondary indexes are made
	// once at its end, which is several times faster than keeping them
	// up to date row by row.
	var any int
	if err := x.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM entries LIMIT 1)`).Scan(&any); err != nil {
		return st, fmt.Errorf("histindex: %w", err)
	}
	if any == 0 {
		if _, err := x.db.ExecContext(ctx, dropIndexes); err != nil {
			return st, fmt.Errorf("histindex: %w", err)
		}
		defer func() {
			// Made again at the next Open if this fails.
			if _, ierr := x.db.ExecContext(context.WithoutCancel(ctx), schema); ierr != nil && err == nil {
				err = fmt.Errorf("histindex: %w", ierr)
			}
		}()
	}
	n := 0
	for _, de := range des {
		if !de.IsDir() || !manifest.ValidAgentID(de.Name()) {
			continue
		}
		if n++; n > maxAgents {
			break
		}
		paths, err := history.Paths(x.opts.HistoryDir, de.Name())
		if err != nil {
			return st, err
		}
		for _, p := range paths {
			st.Files++
			if err := x.syncFile(ctx, de.Name(), p, &st); err != nil {
				return st, err
			}
		}
	}
	pruned, err := x.prune(ctx)
	st.Pruned = pruned
	return st, err
}

// fileState is what the index holds of one history file.
type fileState struct {
	n, ino, size, line int64
}

func (x *Index) fileState(ctx context.Context, agent, path string, ino int64) (fileState, bool, error) {
	var f fileState
	err := x.db.QueryRowContext(ctx, `SELECT n, ino, size, line FROM files WHERE path=?`, path).Scan(&f.n, &f.ino, &f.size, &f.line)
	if errors.Is(err, sql.ErrNoRows) {
		err = x.db.QueryRowContext(ctx, `INSERT INTO files(path, agent, ino, size, line) VALUES(?,?,?,0,0) RETURNING n`, path, agent, ino).Scan(&f.n)
		f.ino = ino
		return f, false, err
	}
	return f, true, err
}

func (x *Index) syncFile(ctx context.Context, agent, path string, st *SyncStats) error {
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	var ino int64
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = int64(sys.Ino)
	}
	f, _, err := x.fileState(ctx, agent, path, ino)
	if err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	if f.ino != ino || fi.Size() < f.size {
		// Replaced or cut: what the index holds of it no longer points
		// at the same bytes.
		st.Reset++
		if err := x.forgetFile(ctx, f.n, agent); err != nil {
			return err
		}
		f.ino, f.size, f.line = ino, 0, 0
	}
	if fi.Size() == f.size {
		return nil
	}
	if _, err := fh.Seek(f.size, io.SeekStart); err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	return x.readLines(ctx, agent, bufio.NewReaderSize(fh, 1<<20), f, st)
}

// readLines indexes the complete lines from f.size on, in batches.
func (x *Index) readLines(ctx context.Context, agent string, r *bufio.Reader, f fileState, st *SyncStats) error {
	w, err := x.begin(ctx)
	if err != nil {
		return err
	}
	defer w.rollback()
	off, pending := f.size, 0
	for {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) {
			break // a partial last line waits for its newline
		}
		if err != nil && !errors.Is(err, errTooLong) {
			return fmt.Errorf("histindex: %w", err)
		}
		start := off
		off += int64(len(line))
		f.line++
		if err == nil {
			if ok, err := w.add(agent, f.n, start, line); err != nil {
				return err
			} else if ok {
				st.Entries++
			} else {
				st.Malformed++
			}
		} else {
			st.Malformed++
		}
		if pending++; pending >= batch {
			if err := w.commit(f.n, ino(f), off, f.line); err != nil {
				return err
			}
			if w, err = x.begin(ctx); err != nil {
				return err
			}
			pending = 0
		}
	}
	return w.commit(f.n, ino(f), off, f.line)
}

func ino(f fileState) int64 { return f.ino }

var errTooLong = errors.New("line too long")

// readLine returns the next line with its newline. A line longer than
// history.MaxLineBytes is consumed and reported as errTooLong (its length
// still advances the offset: the returned slice has it).
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !long {
			buf = append(buf, chunk...)
			if len(buf) > history.MaxLineBytes {
				long = true
				buf = make([]byte, len(buf)) // keep the length only
			}
		} else {
			buf = append(buf, make([]byte, len(chunk))...)
		}
		switch {
		case err == nil && long:
			return buf, errTooLong
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// line is what the index takes of one history entry: its bodies are
// skipped.
type line struct {
	ID          string            `json:"id"`
	Timestamp   time.Time         `json:"timestamp"`
	AgentID     string            `json:"agent_id"`
	Format      string            `json:"format"`
	Model       string            `json:"model"`
	Status      string            `json:"status"`
	StatusCode  int               `json:"status_code"`
	LatencyMS   int64             `json:"latency_ms"`
	Usage       history.Usage     `json:"usage"`
	Error       string            `json:"error"`
	CostUSD     json.Number       `json:"cost_usd"`
	CostUnknown bool              `json:"cost_unknown"`
	Filtered    []json.RawMessage `json:"policy_filtered"`
	ToolTrace   []struct {
		Round     int `json:"round"`
		ToolCalls []struct {
			Name             string          `json:"name"`
			Mode             string          `json:"mode"`
			LatencyMS        int64           `json:"latency_ms"`
			Result           json.RawMessage `json:"result"`
			DuplicateOfRound int             `json:"duplicate_of_round"`
		} `json:"tool_calls"`
	} `json:"tool_trace"`
}

// resultStatus reads a call's outcome from its result envelope: "ok", the
// error's code (or "error"), with its message.
func resultStatus(result json.RawMessage, dup bool) (string, string) {
	if dup {
		return "duplicate", ""
	}
	var env struct {
		OK    *bool `json:"ok"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(result, &env) != nil || env.OK == nil {
		return "ok", ""
	}
	if *env.OK {
		return "ok", ""
	}
	if env.Error == nil {
		return "error", ""
	}
	code := env.Error.Code
	if code == "" {
		code = "error"
	}
	return clip(code, 64), clip(env.Error.Message, maxErrorBytes)
}

// clip bounds s to n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// microUSD converts a decimal number of dollars to micro-dollars, exactly
// (rounded half away from zero at the micro-dollar).
func microUSD(n json.Number) (int64, bool) {
	if n == "" {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || len(n) > 64 {
		return 0, false
	}
	r.Mul(r, big.NewRat(1_000_000, 1))
	num, den := r.Num(), r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(m.Abs(m), big.NewInt(2)).Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

// Path is where the index of a history directory lives by default when
// no other is configured: beside cllama's other state.
func Path(stateDir string) string { return filepath.Join(stateDir, "console-index.db") }
