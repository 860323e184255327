package console

import (
	"strconv"
	"strings"
	"time"
)

// Amount renders v in the budget's unit: dollars for usd, else a count
// with its unit ("1,200 tokens").
func (b Budget) Amount(v int64) string {
	if b.Unit == "usd" {
		return usd(v)
	}
	unit := b.Unit
	if v == 1 {
		unit = strings.TrimSuffix(unit, "s")
	}
	return grouped(v) + " " + unit
}

// Level is how much of the limit the window has spent: "over" at or past
// it, "near" from 80%, else "".
func (b Budget) Level() string {
	switch {
	case b.Limit <= 0:
		return ""
	case b.Spent >= b.Limit:
		return "over"
	case b.Spent*5 >= b.Limit*4:
		return "near"
	}
	return ""
}

// Resets renders when the window starts again, relative to now.
func (b Budget) Resets(now time.Time) string {
	if b.ResetsAt.IsZero() {
		return "never"
	}
	d := b.ResetsAt.Sub(now)
	switch {
	case d <= 0:
		return "now"
	case d < time.Minute:
		return "in " + strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return "in " + strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return "in " + strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return "in " + strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// grouped writes n with thousands separators.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
