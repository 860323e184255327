package histindex

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
)

// ErrNotFound is returned for an entry id the index does not hold.
var ErrNotFound = errors.New("histindex: no such entry")

// Turn is one indexed entry (an exchange or a native call).
type Turn struct {
	ID          string
	Agent       string
	Time        time.Time
	Format      string
	Model       string
	Status      string
	StatusCode  int
	LatencyMS   int64
	TokensIn    int
	TokensOut   int
	Rounds      int
	Calls       []Call
	Filtered    int // tools withheld by policy
	CostMicros  *int64
	CostUnknown bool
	Error       string
}

// Call is one tool call of an entry.
type Call struct {
	Round     int
	Tool      string
	Mode      string
	LatencyMS int64
	Status    string // "ok", "duplicate", or the error's code
	Error     string
}

// Failed reports whether the call failed.
func (c Call) Failed() bool { return c.Status != "ok" && c.Status != "duplicate" }

// Agents lists the agents that have history, sorted.
func (x *Index) Agents(ctx context.Context) ([]string, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT DISTINCT agent FROM files ORDER BY agent`)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// LastActivity is the time of agent's latest entry (zero when none).
func (x *Index) LastActivity(ctx context.Context, agent string) (time.Time, error) {
	var ms sql.NullInt64
	if err := x.db.QueryRowContext(ctx, `SELECT max(ts) FROM entries WHERE agent=?`, agent).Scan(&ms); err != nil {
		return time.Time{}, fmt.Errorf("histindex: %w", err)
	}
	if !ms.Valid {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms.Int64).UTC(), nil
}

// Spend is an agent's recorded cost over a period.
type Spend struct {
	Micros  int64 // micro-USD of the entries that carried a cost
	Unknown int   // entries whose cost was unknown
	Entries int
}

// SpendSince sums each agent's cost from the hour of since on (the
// hourly rollup: since is taken back to its hour).
func (x *Index) SpendSince(ctx context.Context, since time.Time) (map[string]Spend, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT agent, sum(cost), sum(unpriced), sum(requests) FROM hours WHERE h >= ? GROUP BY agent`, since.UnixMilli()/3600000)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	defer rows.Close()
	out := map[string]Spend{}
	for rows.Next() {
		var a string
		var s Spend
		if err := rows.Scan(&a, &s.Micros, &s.Unknown, &s.Entries); err != nil {
			return nil, err
		}
		out[a] = s
	}
	return out, rows.Err()
}

const turnCols = `n, id, agent, ts, format, model, status, code, latency, tin, tout, rounds, calls, filtered, cost, cost_unknown, error`

func scanTurn(rows *sql.Rows) (int64, Turn, error) {
	var (
		t     Turn
		n, ts int64
		calls int
		cost  sql.NullInt64
	)
	err := rows.Scan(&n, &t.ID, &t.Agent, &ts, &t.Format, &t.Model, &t.Status, &t.StatusCode, &t.LatencyMS,
		&t.TokensIn, &t.TokensOut, &t.Rounds, &calls, &t.Filtered, &cost, &t.CostUnknown, &t.Error)
	t.Time = time.UnixMilli(ts).UTC()
	if cost.Valid {
		t.CostMicros = &cost.Int64
	}
	return n, t, err
}

// Recent returns agent's latest entries, newest first, at most limit,
// with their tool calls.
func (x *Index) Recent(ctx context.Context, agent string, limit int) ([]Turn, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT `+turnCols+` FROM entries WHERE agent=? ORDER BY ts DESC, n DESC LIMIT ?`, agent, limit)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	var (
		out []Turn
		ns  []int64
	)
	for rows.Next() {
		n, t, err := scanTurn(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, t)
		ns = append(ns, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i, n := range ns {
		if out[i].Calls, err = x.calls(ctx, n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (x *Index) calls(ctx context.Context, entry int64) ([]Call, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT round, tool, mode, latency, status, error FROM calls WHERE entry=? ORDER BY rowid`, entry)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		var c Call
		if err := rows.Scan(&c.Round, &c.Tool, &c.Mode, &c.LatencyMS, &c.Status, &c.Error); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Entry reads the entry id in full from its history file.
func (x *Index) Entry(ctx context.Context, id string) (*history.Entry, Turn, error) {
	var (
		path   string
		off, n int64
	)
	rows, err := x.db.QueryContext(ctx, `SELECT e.n, e.id, e.agent, e.ts, e.format, e.model, e.status, e.code, e.latency,
		e.tin, e.tout, e.rounds, e.calls, e.filtered, e.cost, e.cost_unknown, e.error, f.path, e.off, e.len
		FROM entries e JOIN files f ON f.n = e.file WHERE e.id=? ORDER BY e.n DESC LIMIT 1`, id)
	if err != nil {
		return nil, Turn{}, fmt.Errorf("histindex: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, Turn{}, ErrNotFound
	}
	var (
		t    Turn
		row  int64
		ts   int64
		cnt  int
		cost sql.NullInt64
	)
	if err := rows.Scan(&row, &t.ID, &t.Agent, &ts, &t.Format, &t.Model, &t.Status, &t.StatusCode, &t.LatencyMS,
		&t.TokensIn, &t.TokensOut, &t.Rounds, &cnt, &t.Filtered, &cost, &t.CostUnknown, &t.Error, &path, &off, &n); err != nil {
		return nil, Turn{}, err
	}
	rows.Close()
	t.Time = time.UnixMilli(ts).UTC()
	if cost.Valid {
		t.CostMicros = &cost.Int64
	}
	if n <= 0 || n > history.MaxLineBytes {
		return nil, t, fmt.Errorf("histindex: entry %s: bad length %d", id, n)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, t, fmt.Errorf("histindex: %w", err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, t, fmt.Errorf("histindex: %w", err)
	}
	var e history.Entry
	if err := json.Unmarshal(buf, &e); err != nil || e.ID != t.ID {
		return nil, t, fmt.Errorf("histindex: entry %s: its history file changed under the index (it is read again on the next sync)", id)
	}
	return &e, t, nil
}

// Bucket is one interval of a series.
type Bucket struct {
	Start    time.Time
	Requests int
	Errors   int
}

// Series counts entries and failed entries per minute from since on (at
// most minuteRetention back), of one agent ("" for every agent).
func (x *Index) Series(ctx context.Context, agent string, since time.Time) ([]Bucket, error) {
	q := `SELECT m, sum(requests), sum(errors) FROM minutes WHERE m >= ? GROUP BY m ORDER BY m`
	args := []any{since.UnixMilli() / 60000}
	if agent != "" {
		q = `SELECT m, requests, errors FROM minutes WHERE m >= ? AND agent = ? ORDER BY m`
		args = append(args, agent)
	}
	rows, err := x.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	defer rows.Close()
	var out []Bucket
	for rows.Next() {
		var k int64
		var bk Bucket
		if err := rows.Scan(&k, &bk.Requests, &bk.Errors); err != nil {
			return nil, err
		}
		bk.Start = time.UnixMilli(k * 60000).UTC()
		out = append(out, bk)
	}
	return out, rows.Err()
}

// SpendSeries sums each agent's cost (micro-USD) per hour from since's
// hour on.
func (x *Index) SpendSeries(ctx context.Context, since time.Time) (map[string]map[time.Time]int64, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT agent, h, cost FROM hours WHERE h >= ? AND cost <> 0`, since.UnixMilli()/3600000)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	defer rows.Close()
	out := map[string]map[time.Time]int64{}
	for rows.Next() {
		var (
			a    string
			k, c int64
		)
		if err := rows.Scan(&a, &k, &c); err != nil {
			return nil, err
		}
		if out[a] == nil {
			out[a] = map[time.Time]int64{}
		}
		out[a][time.UnixMilli(k*3600000).UTC()] = c
	}
	return out, rows.Err()
}

// maxToolSample bounds the calls a tool summary reads.
const maxToolSample = 50_000

// ToolStat summarises one tool's calls over a window.
type ToolStat struct {
	Tool        string
	Calls       int
	Errors      int
	P50, P95    int64 // latency, ms, of the calls executed
	LastError   string
	LastErrorAt time.Time
	Sampled     bool // the window held more calls than were read
}

// Tools summarises the calls of every tool from since on (the most recent
// maxToolSample calls at most), with each tool's last error ever indexed.
func (x *Index) Tools(ctx context.Context, since time.Time) ([]ToolStat, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT tool, latency, status FROM calls WHERE ts >= ? ORDER BY ts DESC LIMIT ?`, since.UnixMilli(), maxToolSample+1)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	lat := map[string][]int64{}
	stats := map[string]*ToolStat{}
	read := 0
	for rows.Next() {
		var (
			tool, status string
			ms           int64
		)
		if err := rows.Scan(&tool, &ms, &status); err != nil {
			rows.Close()
			return nil, err
		}
		if read++; read > maxToolSample {
			for _, s := range stats {
				s.Sampled = true
			}
			break
		}
		s := stats[tool]
		if s == nil {
			s = &ToolStat{Tool: tool}
			stats[tool] = s
		}
		s.Calls++
		if status != "ok" && status != "duplicate" {
			s.Errors++
		}
		if status != "duplicate" {
			lat[tool] = append(lat[tool], ms)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	names, err := x.toolNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ToolStat, 0, len(names))
	for _, name := range names {
		s := stats[name]
		if s == nil {
			s = &ToolStat{Tool: name}
		}
		s.P50, s.P95 = percentile(lat[name], 50), percentile(lat[name], 95)
		var ts int64
		err := x.db.QueryRowContext(ctx, `SELECT error, ts FROM calls WHERE tool=? AND status NOT IN ('ok', 'duplicate') ORDER BY ts DESC LIMIT 1`, name).Scan(&s.LastError, &ts)
		if err == nil {
			s.LastErrorAt = time.UnixMilli(ts).UTC()
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("histindex: %w", err)
		}
		out = append(out, *s)
	}
	return out, nil
}

func (x *Index) toolNames(ctx context.Context) ([]string, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT tool FROM tools ORDER BY tool LIMIT 10000`)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// percentile is the p-th percentile (nearest rank) of v; 0 when empty.
func percentile(v []int64, p int) int64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := (len(v)*p + 99) / 100
	return v[max(i-1, 0)]
}
