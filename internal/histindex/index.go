// Package histindex is the operator console's index over session history:
// an embedded SQLite database (modernc.org/sqlite, pure Go) holding one
// row per history entry and one per managed or native tool call, with the
// byte range of each entry's line in its history file. The history files
// stay the source of truth: the index only points into them, reads their
// new complete lines as they grow (Sync), and is rebuilt from them when it
// is missing, of another schema, or unreadable (delete the file to force
// it). Its memory is bounded by SQLite's page cache (CacheKiB per
// connection, MaxConns connections) and its disk by MaxEntries: past it
// the oldest entries leave the index (never the files).
package histindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// schemaVersion changes whenever the tables do: an index of another
// version is dropped and rebuilt from the history files.
const schemaVersion = 2

// Defaults.
const (
	DefaultMaxEntries = 2_000_000
	DefaultCacheKiB   = 8 << 10
	// MaxConns bounds the database connections (each has its own page
	// cache of CacheKiB).
	MaxConns = 4
	// maxErrorBytes bounds the error text kept per entry or call.
	maxErrorBytes = 300
)

// Options configure an Index.
type Options struct {
	// HistoryDir is cllama's history directory (CLAW_SESSION_HISTORY_DIR).
	HistoryDir string
	// Path is the database file. Its directory is created 0700.
	Path string
	// MaxEntries bounds the entries kept (default DefaultMaxEntries).
	MaxEntries int
	// CacheKiB is SQLite's page cache per connection (default
	// DefaultCacheKiB).
	CacheKiB int
}

// Index is an open index. It is safe for concurrent use: one Sync runs at
// a time, queries run beside it.
type Index struct {
	db   *sql.DB
	opts Options
	sync sync.Mutex
}

const schema = `
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
	n INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, agent TEXT NOT NULL,
	ino INTEGER NOT NULL, size INTEGER NOT NULL, line INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
	n INTEGER PRIMARY KEY, id TEXT NOT NULL, agent TEXT NOT NULL, ts INTEGER NOT NULL,
	format TEXT NOT NULL, model TEXT NOT NULL, status TEXT NOT NULL, code INTEGER NOT NULL,
	latency INTEGER NOT NULL, tin INTEGER NOT NULL, tout INTEGER NOT NULL, rounds INTEGER NOT NULL,
	calls INTEGER NOT NULL, filtered INTEGER NOT NULL, cost INTEGER, cost_unknown INTEGER NOT NULL,
	error TEXT NOT NULL, file INTEGER NOT NULL, off INTEGER NOT NULL, len INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS entries_id ON entries(id);
CREATE INDEX IF NOT EXISTS entries_agent_ts ON entries(agent, ts);
CREATE INDEX IF NOT EXISTS entries_ts ON entries(ts, agent, status, cost);
CREATE TABLE IF NOT EXISTS calls(
	entry INTEGER NOT NULL, ts INTEGER NOT NULL, round INTEGER NOT NULL, tool TEXT NOT NULL,
	mode TEXT NOT NULL, latency INTEGER NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS calls_entry ON calls(entry);
CREATE INDEX IF NOT EXISTS calls_ts ON calls(ts);
CREATE INDEX IF NOT EXISTS calls_failed ON calls(tool, ts) WHERE status NOT IN ('ok', 'duplicate');
CREATE TABLE IF NOT EXISTS tools(tool TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS minutes(m INTEGER NOT NULL, agent TEXT NOT NULL, requests INTEGER NOT NULL,
	errors INTEGER NOT NULL, PRIMARY KEY(m, agent)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hours(h INTEGER NOT NULL, agent TEXT NOT NULL, requests INTEGER NOT NULL,
	errors INTEGER NOT NULL, cost INTEGER NOT NULL, unpriced INTEGER NOT NULL, PRIMARY KEY(h, agent)) WITHOUT ROWID;
`

// dropIndexes drops the secondary indexes (schema makes them again).
const dropIndexes = `DROP INDEX IF EXISTS entries_id; DROP INDEX IF EXISTS entries_agent_ts; DROP INDEX IF EXISTS entries_ts;
DROP INDEX IF EXISTS calls_entry; DROP INDEX IF EXISTS calls_ts; DROP INDEX IF EXISTS calls_failed;`

// Open opens (or creates, or rebuilds) the index at o.Path. It does not
// read history: call Sync.
func Open(o Options) (*Index, error) {
	if o.Path == "" || o.HistoryDir == "" {
		return nil, errors.New("histindex: Path and HistoryDir are required")
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.CacheKiB <= 0 {
		o.CacheKiB = DefaultCacheKiB
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	x, err := open(o)
	if err == nil {
		return x, nil
	}
	// Unreadable or of another schema: the files are the truth, start over.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if rerr := os.Remove(o.Path + suffix); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return nil, fmt.Errorf("histindex: %v; removing it to rebuild: %w", err, rerr)
		}
	}
	return open(o)
}

func open(o Options) (*Index, error) {
	dsn := "file:" + o.Path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)" +
		"&_pragma=cache_size(-" + strconv.Itoa(o.CacheKiB) + ")&_pragma=temp_store(MEMORY)&_pragma=mmap_size(0)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("histindex: %s: %w", o.Path, err)
	}
	db.SetMaxOpenConns(MaxConns)
	x := &Index{db: db, opts: o}
	if err := x.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("histindex: %s: %w", o.Path, err)
	}
	_ = os.Chmod(o.Path, 0o600) // it holds what history holds
	return x, nil
}

func (x *Index) init() error {
	ctx := context.Background()
	var v string
	err := x.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k='schema'`).Scan(&v)
	switch {
	case err == nil && v != strconv.Itoa(schemaVersion):
		return fmt.Errorf("index schema %s, want %d", v, schemaVersion)
	case err != nil && !isNoTable(err) && !errors.Is(err, sql.ErrNoRows):
		return err
	}
	if _, err := x.db.ExecContext(ctx, schema); err != nil {
		return err
	}
	_, err = x.db.ExecContext(ctx, `INSERT OR REPLACE INTO meta(k, v) VALUES('schema', ?)`, strconv.Itoa(schemaVersion))
	return err
}

func isNoTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// Close closes the database.
func (x *Index) Close() error {
	if x == nil {
		return nil
	}
	return x.db.Close()
}

// Size is the database's size on disk in bytes (with its write-ahead log).
func (x *Index) Size() int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(x.opts.Path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}
