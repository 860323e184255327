package histindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// writer is one write transaction of a Sync.
type writer struct {
	ctx         context.Context
	tx          *sql.Tx
	entry, call *sql.Stmt
	tools       map[string]struct{}
	done        bool
}

func (x *Index) begin(ctx context.Context) (*writer, error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	w := &writer{ctx: ctx, tx: tx, tools: map[string]struct{}{}}
	w.entry, err = tx.PrepareContext(ctx, `INSERT INTO entries(id, agent, ts, format, model, status, code, latency,
		tin, tout, rounds, calls, filtered, cost, cost_unknown, error, file, off, len)
		VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING n`)
	if err == nil {
		w.call, err = tx.PrepareContext(ctx, `INSERT INTO calls(entry, ts, round, tool, mode, latency, status, error) VALUES(?,?,?,?,?,?,?,?)`)
	}
	if err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("histindex: %w", err)
	}
	return w, nil
}

func (w *writer) rollback() {
	if !w.done {
		w.done = true
		_ = w.tx.Rollback()
	}
}

// add indexes one line; false when it is not an entry of agent.
func (w *writer) add(agent string, file, off int64, text []byte) (bool, error) {
	var e line
	if json.Unmarshal(text, &e) != nil || e.AgentID != agent || e.ID == "" {
		return false, nil
	}
	calls := 0
	for _, r := range e.ToolTrace {
		calls += len(r.ToolCalls)
	}
	var cost any
	if c, ok := microUSD(e.CostUSD); ok {
		cost = c
	}
	ts := e.Timestamp.UnixMilli()
	var n int64
	err := w.entry.QueryRowContext(w.ctx, clip(e.ID, 128), agent, ts, clip(e.Format, 32), clip(e.Model, 200), clip(e.Status, 16),
		e.StatusCode, e.LatencyMS, e.Usage.PromptTokens, e.Usage.CompletionTokens, e.Usage.TotalRounds, calls,
		len(e.Filtered), cost, e.CostUnknown, clip(e.Error, maxErrorBytes), file, off, len(text)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("histindex: %w", err)
	}
	for _, r := range e.ToolTrace {
		for _, c := range r.ToolCalls {
			status, msg := resultStatus(c.Result, c.DuplicateOfRound > 0)
			mode := c.Mode
			if mode == "" {
				mode = "mediated"
			}
			tool := clip(c.Name, 200)
			if _, err := w.call.ExecContext(w.ctx, n, ts, r.Round, tool, clip(mode, 16), c.LatencyMS, status, msg); err != nil {
				return false, fmt.Errorf("histindex: %w", err)
			}
			if len(w.tools) < 10_000 {
				w.tools[tool] = struct{}{}
			}
		}
	}
	return true, nil
}

// commit records how far file n was read and commits.
func (w *writer) commit(file, ino, size, lines int64) error {
	defer w.rollback()
	for t := range w.tools {
		if _, err := w.tx.ExecContext(w.ctx, `INSERT OR IGNORE INTO tools(tool) VALUES(?)`, t); err != nil {
			return fmt.Errorf("histindex: %w", err)
		}
	}
	if _, err := w.tx.ExecContext(w.ctx, `UPDATE files SET ino=?, size=?, line=? WHERE n=?`, ino, size, lines, file); err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	if err := w.tx.Commit(); err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	w.done = true
	return nil
}

// forgetFile drops what the index holds of file n.
func (x *Index) forgetFile(ctx context.Context, n int64) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DELETE FROM calls WHERE entry IN (SELECT n FROM entries WHERE file=?)`,
		`DELETE FROM entries WHERE file=?`,
		`UPDATE files SET size=0, line=0 WHERE n=?`,
	} {
		if _, err := tx.ExecContext(ctx, q, n); err != nil {
			return fmt.Errorf("histindex: %w", err)
		}
	}
	return tx.Commit()
}

// prune drops the oldest entries past MaxEntries.
func (x *Index) prune(ctx context.Context) (int, error) {
	// Row numbers only grow: their span bounds the count without a scan.
	var span int64
	if err := x.db.QueryRowContext(ctx, `SELECT coalesce(max(n) - min(n) + 1, 0) FROM entries`).Scan(&span); err != nil {
		return 0, fmt.Errorf("histindex: %w", err)
	}
	if span <= int64(x.opts.MaxEntries) {
		return 0, nil
	}
	var count int64
	if err := x.db.QueryRowContext(ctx, `SELECT count(*) FROM entries`).Scan(&count); err != nil {
		return 0, fmt.Errorf("histindex: %w", err)
	}
	excess := count - int64(x.opts.MaxEntries)
	if excess <= 0 {
		return 0, nil
	}
	var cut int64
	if err := x.db.QueryRowContext(ctx, `SELECT n FROM entries ORDER BY n LIMIT 1 OFFSET ?`, excess-1).Scan(&cut); err != nil {
		return 0, fmt.Errorf("histindex: %w", err)
	}
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("histindex: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM calls WHERE entry <= ?`, cut); err != nil {
		return 0, fmt.Errorf("histindex: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM entries WHERE n <= ?`, cut); err != nil {
		return 0, fmt.Errorf("histindex: %w", err)
	}
	return int(excess), tx.Commit()
}
