package alerts

import (
	"sync"
	"time"
)

// Limiter keeps a storm of one kind of event to a handful: Allow(key)
// admits at most burst events per key in any window of length per. Keys
// are the callers' (an event type, or a type and a provider). The number
// of keys is bounded: past maxKeys the oldest windows are forgotten.
type Limiter struct {
	per   time.Duration
	burst int
	now   func() time.Time

	mu   sync.Mutex
	seen map[string][]time.Time
}

const maxLimiterKeys = 4096

// NewLimiter returns a Limiter admitting burst events per key per window.
func NewLimiter(per time.Duration, burst int) *Limiter {
	return &Limiter{per: per, burst: max(burst, 1), now: time.Now, seen: map[string][]time.Time{}}
}

// WithClock sets the Limiter's clock (tests).
func (l *Limiter) WithClock(now func() time.Time) *Limiter {
	l.now = now
	return l
}

// Allow reports whether one more event for key may be sent now, and
// counts it when it may.
func (l *Limiter) Allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	kept := l.seen[key][:0]
	for _, t := range l.seen[key] {
		if now.Sub(t) < l.per {
			kept = append(kept, t)
		}
	}
	if len(kept) >= l.burst {
		l.seen[key] = kept
		return false
	}
	if _, ok := l.seen[key]; !ok && len(l.seen) >= maxLimiterKeys {
		for k, ts := range l.seen {
			if len(ts) == 0 || now.Sub(ts[len(ts)-1]) >= l.per {
				delete(l.seen, k)
			}
		}
		if len(l.seen) >= maxLimiterKeys {
			return false
		}
	}
	l.seen[key] = append(kept, now)
	return true
}
