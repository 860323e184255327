package histindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// rowsPerInsert is how many rows one INSERT statement carries.
const rowsPerInsert = 100

const (
	entryCols = 20
	callCols  = 8
)

// Rollups: requests per minute are kept minuteRetention, per hour (with
// cost) hourRetention.
const (
	minuteRetention = 48 * time.Hour
	hourRetention   = 400 * 24 * time.Hour
)

type rollKey struct {
	agent string
	at    int64
}

type roll struct {
	requests, errors, cost, unpriced int64
}

// writer is one write transaction of a Sync.
type writer struct {
	ctx     context.Context
	tx      *sql.Tx
	next    int64 // the next entry's row number
	entries []any
	calls   []any
	stmts   map[string]*sql.Stmt
	tools   map[string]struct{}
	minutes map[rollKey]*roll
	// minuteFloor: older entries are past the minutes' retention.
	minuteFloor int64
	hours       map[rollKey]*roll
	done        bool
}

func (x *Index) begin(ctx context.Context) (*writer, error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	w := &writer{ctx: ctx, tx: tx, stmts: map[string]*sql.Stmt{}, tools: map[string]struct{}{},
		minutes: map[rollKey]*roll{}, hours: map[rollKey]*roll{}, minuteFloor: time.Now().Add(-minuteRetention).UnixMilli()}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(n), 0) + 1 FROM entries`).Scan(&w.next); err != nil {
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

// insert runs an INSERT of len(args)/cols rows into table.
func (w *writer) insert(table, cols string, ncols int, args []any) error {
	rows := len(args) / ncols
	q := fmt.Sprintf("%s/%d", table, rows)
	st := w.stmts[q]
	if st == nil {
		one := "(" + strings.TrimSuffix(strings.Repeat("?,", ncols), ",") + ")"
		var err error
		st, err = w.tx.PrepareContext(w.ctx, "INSERT INTO "+table+"("+cols+") VALUES "+strings.TrimSuffix(strings.Repeat(one+",", rows), ","))
		if err != nil {
			return fmt.Errorf("histindex: %w", err)
		}
		w.stmts[q] = st
	}
	if _, err := st.ExecContext(w.ctx, args...); err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	return nil
}

const (
	entryColNames = `n, id, agent, ts, format, model, status, code, latency, tin, tout, rounds, calls, filtered, cost, cost_unknown, error, file, off, len`
	callColNames  = `entry, ts, round, tool, mode, latency, status, error`
)

// flush writes the rows buffered.
func (w *writer) flush(all bool) error {
	for len(w.entries) >= rowsPerInsert*entryCols || all && len(w.entries) > 0 {
		k := min(len(w.entries), rowsPerInsert*entryCols)
		if err := w.insert("entries", entryColNames, entryCols, w.entries[:k]); err != nil {
			return err
		}
		w.entries = w.entries[k:]
	}
	for len(w.calls) >= rowsPerInsert*callCols || all && len(w.calls) > 0 {
		k := min(len(w.calls), rowsPerInsert*callCols)
		if err := w.insert("calls", callColNames, callCols, w.calls[:k]); err != nil {
			return err
		}
		w.calls = w.calls[k:]
	}
	return nil
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
	c, priced := microUSD(e.CostUSD)
	if priced {
		cost = c
	}
	ts := e.Timestamp.UnixMilli()
	n := w.next
	w.next++
	w.entries = append(w.entries, n, clip(e.ID, 128), agent, ts, clip(e.Format, 32), clip(e.Model, 200), clip(e.Status, 16),
		e.StatusCode, e.LatencyMS, e.Usage.PromptTokens, e.Usage.CompletionTokens, e.Usage.TotalRounds, calls,
		len(e.Filtered), cost, e.CostUnknown, clip(e.Error, maxErrorBytes), file, off, len(text))
	for _, r := range e.ToolTrace {
		for _, c := range r.ToolCalls {
			status, msg := resultStatus(c.Result, c.DuplicateOfRound > 0)
			mode := c.Mode
			if mode == "" {
				mode = "mediated"
			}
			tool := clip(c.Name, 200)
			w.calls = append(w.calls, n, ts, r.Round, tool, clip(mode, 16), c.LatencyMS, status, msg)
			if len(w.tools) < 10_000 {
				w.tools[tool] = struct{}{}
			}
		}
	}
	failed := e.Status != "ok"
	if ts >= w.minuteFloor {
		w.rollup(w.minutes, rollKey{agent, ts / time.Minute.Milliseconds()}, failed, 0, false)
	}
	w.rollup(w.hours, rollKey{agent, ts / time.Hour.Milliseconds()}, failed, c, !priced)
	return true, w.flush(false)
}

func (w *writer) rollup(m map[rollKey]*roll, k rollKey, failed bool, cost int64, unpriced bool) {
	r := m[k]
	if r == nil {
		r = &roll{}
		m[k] = r
	}
	r.requests++
	if failed {
		r.errors++
	}
	r.cost += cost
	if unpriced {
		r.unpriced++
	}
}

// commit writes the rollups, records how far file n was read and commits.
func (w *writer) commit(file, ino, size, lines int64) error {
	defer w.rollback()
	if err := w.flush(true); err != nil {
		return err
	}
	for t := range w.tools {
		if _, err := w.tx.ExecContext(w.ctx, `INSERT OR IGNORE INTO tools(tool) VALUES(?)`, t); err != nil {
			return fmt.Errorf("histindex: %w", err)
		}
	}
	mins, err := w.tx.PrepareContext(w.ctx, `INSERT INTO minutes(m, agent, requests, errors) VALUES(?,?,?,?)
		ON CONFLICT(m, agent) DO UPDATE SET requests = requests + excluded.requests, errors = errors + excluded.errors`)
	if err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	for k, r := range w.minutes {
		if _, err := mins.ExecContext(w.ctx, k.at, k.agent, r.requests, r.errors); err != nil {
			return fmt.Errorf("histindex: %w", err)
		}
	}
	hrs, err := w.tx.PrepareContext(w.ctx, `INSERT INTO hours(h, agent, requests, errors, cost, unpriced) VALUES(?,?,?,?,?,?)
		ON CONFLICT(h, agent) DO UPDATE SET requests = requests + excluded.requests, errors = errors + excluded.errors,
		cost = cost + excluded.cost, unpriced = unpriced + excluded.unpriced`)
	if err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	for k, r := range w.hours {
		if _, err := hrs.ExecContext(w.ctx, k.at, k.agent, r.requests, r.errors, r.cost, r.unpriced); err != nil {
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

// forgetFile drops what the index holds of file n, and the rollups of its
// agent are counted again from the entries left.
func (x *Index) forgetFile(ctx context.Context, n int64, agent string) error {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("histindex: %w", err)
	}
	defer tx.Rollback()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM calls WHERE entry IN (SELECT n FROM entries WHERE file=?)`, []any{n}},
		{`DELETE FROM entries WHERE file=?`, []any{n}},
		{`UPDATE files SET size=0, line=0 WHERE n=?`, []any{n}},
		{`DELETE FROM minutes WHERE agent=?`, []any{agent}},
		{`DELETE FROM hours WHERE agent=?`, []any{agent}},
		{`INSERT INTO minutes(m, agent, requests, errors) SELECT ts / 60000, agent, count(*), sum(status <> 'ok')
			FROM entries WHERE agent=? AND ts >= ? GROUP BY 1, 2`, []any{agent, time.Now().Add(-minuteRetention).UnixMilli()}},
		{`INSERT INTO hours(h, agent, requests, errors, cost, unpriced) SELECT ts / 3600000, agent, count(*), sum(status <> 'ok'),
			coalesce(sum(cost), 0), sum(cost IS NULL) FROM entries WHERE agent=? GROUP BY 1, 2`, []any{agent}},
	} {
		if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("histindex: %w", err)
		}
	}
	return tx.Commit()
}

// prune drops the oldest entries past MaxEntries, and rollups past their
// retention.
func (x *Index) prune(ctx context.Context) (int, error) {
	now := time.Now()
	if _, err := x.db.ExecContext(ctx, `DELETE FROM minutes WHERE m < ?`, now.Add(-minuteRetention).UnixMilli()/60000); err != nil {
		return 0, fmt.Errorf("histindex: %w", err)
	}
	if _, err := x.db.ExecContext(ctx, `DELETE FROM hours WHERE h < ?`, now.Add(-hourRetention).UnixMilli()/3600000); err != nil {
		return 0, fmt.Errorf("histindex: %w", err)
	}
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
