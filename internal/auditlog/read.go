// Package auditlog is the reading side of cllama's audit trail, for `claw
// audit`: it parses the audit lines cllama writes on stdout (as `docker
// compose logs` shows them, prefixes and all), turns session-history
// tool_trace rounds into tool_call records, merges the two without counting
// a call twice, filters, and summarises per agent (spec 000 "audit", spec
// 002 "Telemetry and Audit"). It does not emit events (internal/audit does)
// or write history (internal/history does).
package auditlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/jsonl"
)

// MaxLineBytes bounds one log line. cllama's audit lines are a few hundred
// bytes; a longer line is counted as malformed and skipped.
const MaxLineBytes = 1 << 20

// ReadStats counts what reading a log saw and skipped.
type ReadStats struct {
	// Lines is the number of non-empty lines.
	Lines int `json:"lines"`
	// Events is the number of audit events read.
	Events int `json:"events"`
	// Malformed lines looked like JSON but were not an audit event (bad
	// JSON, no type or ts, over-long); they are skipped, never fatal.
	Malformed int `json:"malformed"`
	// Other lines are not JSON at all: cllama's diagnostics on stderr,
	// which `docker compose logs` interleaves with the audit lines.
	Other int `json:"other"`
}

// ParseLine reads one log line. It strips a compose log prefix
// ("cllama-1  | ", "pod_cllama_1  | ") and returns the event. ok is false
// for blank lines and lines that are not JSON (other); err is set for JSON
// lines that are not a valid event (malformed).
func ParseLine(line []byte) (e audit.Event, ok bool, err error) {
	b := payload(line)
	if len(b) == 0 || b[0] != '{' {
		return e, false, nil
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, false, fmt.Errorf("not an audit event: %w", err)
	}
	if e.Type == "" || e.TS.IsZero() {
		return e, false, errors.New("not an audit event: no type or ts")
	}
	return e, true, nil
}

// payload strips surrounding white space and a compose log prefix. The
// prefix is everything up to the first "|" when no "{" comes before it, so
// a "|" inside an event's JSON is never taken for one.
func payload(line []byte) []byte {
	b := bytes.TrimSpace(line)
	if len(b) == 0 || b[0] == '{' {
		return b
	}
	if i := bytes.IndexByte(b, '|'); i >= 0 && bytes.IndexByte(b[:i], '{') < 0 {
		return bytes.TrimSpace(b[i+1:])
	}
	return b
}

// Events returns an iterator over the audit events of r, in log order.
// Blank, other and malformed lines are counted in stats (when non-nil) and
// skipped. The iterator yields a non-nil error only for a read failure, and
// then stops.
func Events(r io.Reader, stats *ReadStats) iter.Seq2[audit.Event, error] {
	if stats == nil {
		stats = new(ReadStats)
	}
	return func(yield func(audit.Event, error) bool) {
		for line, err := range jsonl.Lines(r, MaxLineBytes) {
			if errors.Is(err, jsonl.ErrLineTooLong) {
				stats.Lines++
				stats.Malformed++
				continue
			}
			if err != nil {
				yield(audit.Event{}, fmt.Errorf("audit log: read: %w", err))
				return
			}
			stats.Lines++
			e, ok, perr := ParseLine(line)
			switch {
			case perr != nil:
				stats.Malformed++
			case !ok:
				if len(payload(line)) > 0 {
					stats.Other++
				}
			default:
				stats.Events++
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// ReadAll collects the events of r.
func ReadAll(r io.Reader) ([]audit.Event, ReadStats, error) {
	var st ReadStats
	var out []audit.Event
	for e, err := range Events(r, &st) {
		if err != nil {
			return out, st, err
		}
		out = append(out, e)
	}
	return out, st, nil
}
