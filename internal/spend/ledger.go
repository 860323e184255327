package spend

import (
	"context"
	"time"
)

// Charge is one counter a call is admitted against: admitted while the
// counter's settled amount plus its reservations is below Limit; Reserve
// is then added to its reservations. Check false adds Reserve without
// checking (a mediated turn's requests count once, at its first call).
type Charge struct {
	Key     string
	Limit   int64
	Reserve int64
	Check   bool
	// Expires is when the counter may be forgotten (its window's end and
	// a day; zero: never).
	Expires time.Time
}

// Settlement replaces a reservation with the amount actually spent.
type Settlement struct {
	Key      string
	Reserved int64
	Actual   int64
	Expires  time.Time
}

// Ledger keeps the counters of every budget. Implementations are safe for
// concurrent use and apply each call atomically: across counters, and
// across replicas sharing one.
type Ledger interface {
	// Reserve admits cs together or not at all. refused is the index of
	// the first checked counter at its limit (-1: admitted), with its
	// settled amount and reservations.
	Reserve(ctx context.Context, cs []Charge) (refused int, settled, reserved int64, err error)
	// Settle applies ss and returns each counter's settled amount after.
	Settle(ctx context.Context, ss []Settlement) ([]int64, error)
	// Spent returns the settled amount of each key (0 when unknown).
	Spent(ctx context.Context, keys []string) ([]int64, error)
}
