package spend

import (
	"fmt"
	"strconv"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// window is the calendar window of per holding now, in loc: its start and
// the instant the next one starts (zero for total and conversation, which
// never reset).
func window(per string, now time.Time, loc *time.Location) (start, end time.Time) {
	t := now.In(loc)
	y, mo, d := t.Date()
	switch per {
	case "minute":
		start = time.Date(y, mo, d, t.Hour(), t.Minute(), 0, 0, loc)
		return start, start.Add(time.Minute)
	case "hour":
		start = time.Date(y, mo, d, t.Hour(), 0, 0, 0, loc)
		// An hour is an hour of real time, also across a zone's change.
		return start, time.Date(y, mo, d, t.Hour()+1, 0, 0, 0, loc)
	case "day":
		return time.Date(y, mo, d, 0, 0, 0, 0, loc), time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
	case "week":
		// Weeks start on Monday (ISO 8601).
		back := (int(t.Weekday()) + 6) % 7
		return time.Date(y, mo, d-back, 0, 0, 0, 0, loc), time.Date(y, mo, d-back+7, 0, 0, 0, 0, loc)
	case "month":
		return time.Date(y, mo, 1, 0, 0, 0, 0, loc), time.Date(y, mo+1, 1, 0, 0, 0, 0, loc)
	}
	return time.Time{}, time.Time{}
}

// limit is one budget entry in force: its scope and owner (the agent, or
// "" for the pod), and its zone loaded.
type limit struct {
	manifest.Budget
	scope string // "agent" or "pod"
	owner string
	loc   *time.Location
}

// Scopes.
const (
	ScopeAgent = "agent"
	ScopePod   = "pod"
)

func newLimit(b manifest.Budget, scope, owner string) (limit, error) {
	if err := b.Check(); err != nil {
		return limit{}, err
	}
	loc := time.UTC
	if b.TZ != "" {
		l, err := time.LoadLocation(b.TZ)
		if err != nil {
			return limit{}, fmt.Errorf("tz %q: %v", b.TZ, err)
		}
		loc = l
	}
	return limit{Budget: b, scope: scope, owner: owner, loc: loc}, nil
}

// key is the ledger counter of l in the window holding now (conversation
// is the conversation's id), and when that window resets.
func (l limit) key(now time.Time, conversation string) (string, time.Time) {
	k := l.scope + ":" + l.owner + ":" + l.Unit + ":" + l.Per
	if l.TZ != "" {
		k += ":" + l.TZ
	}
	switch l.Per {
	case "total":
		return k, time.Time{}
	case "conversation":
		return k + ":" + conversation, time.Time{}
	}
	start, end := window(l.Per, now, l.loc)
	return k + ":" + strconv.FormatInt(start.Unix(), 10), end
}
