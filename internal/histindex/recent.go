package histindex

import (
	"context"
	"fmt"
	"time"

	"github.com/clawdapus/clawgo/internal/history"
)

// SlotCount is one agent's exchanges in one slot of time: how many,
// how many failed, and the latest one's time.
type SlotCount struct {
	Agent    string
	Start    time.Time
	Requests int
	Errors   int
	Last     time.Time
}

// maxSlotCounts bounds what Exchanges returns.
const maxSlotCounts = 100_000

// Exchanges counts each agent's exchanges that started in [since, until)
// per slot of the given width (native calls, format mcp, are not
// exchanges; an entry whose status is not "ok" failed). It reads the
// entries themselves, not the per-minute rollup: it is meant for a few
// minutes of history (the console seeds its live counters with it).
func (x *Index) Exchanges(ctx context.Context, since, until time.Time, slot time.Duration) ([]SlotCount, error) {
	w := slot.Milliseconds()
	if w <= 0 {
		return nil, fmt.Errorf("histindex: slot %v under a millisecond", slot)
	}
	rows, err := x.db.QueryContext(ctx, `SELECT agent, ts / ?, count(*), sum(status != 'ok'), max(ts) FROM entries
		WHERE ts >= ? AND ts < ? AND format != ? GROUP BY agent, ts / ? LIMIT ?`,
		w, since.UnixMilli(), until.UnixMilli(), history.FormatMCP, w, maxSlotCounts)
	if err != nil {
		return nil, fmt.Errorf("histindex: %w", err)
	}
	defer rows.Close()
	var out []SlotCount
	for rows.Next() {
		var c SlotCount
		var k, last int64
		if err := rows.Scan(&c.Agent, &k, &c.Requests, &c.Errors, &last); err != nil {
			return nil, err
		}
		c.Start, c.Last = time.UnixMilli(k*w).UTC(), time.UnixMilli(last).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}
