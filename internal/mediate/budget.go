package mediate

import (
	"context"
	"sync"
	"time"
)

// budget is a turn's total_timeout_ms as a context that can be paused: a
// call held for a person's decision (internal/approvals) waits outside
// the turn's budget, which runs on, from where it stopped, once the call
// is decided. It ends with context.DeadlineExceeded like the
// context.WithTimeout it stands for.
type budget struct {
	context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	deadline time.Time
	timer    *time.Timer
	paused   int
	left     time.Duration
}

func newBudget(parent context.Context, d time.Duration) *budget {
	ctx, cancel := context.WithCancelCause(parent)
	b := &budget{Context: ctx, cancel: cancel, deadline: time.Now().Add(d)}
	b.timer = time.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return b
}

// Deadline is when the budget runs out if nothing pauses it again.
func (b *budget) Deadline() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.paused > 0 {
		return time.Now().Add(b.left), true
	}
	return b.deadline, true
}

// Err is context.DeadlineExceeded once the budget ran out.
func (b *budget) Err() error {
	err := b.Context.Err()
	if err != nil && context.Cause(b.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}

// stop releases the budget's timer and context.
func (b *budget) stop() {
	b.timer.Stop()
	b.cancel(context.Canceled)
}

// pause stops the budget until the function it returns is called (each
// pause once; overlapping pauses hold it until the last ends).
func (b *budget) pause() (resume func()) {
	b.mu.Lock()
	if b.paused == 0 {
		if !b.timer.Stop() {
			// Already out: nothing to pause.
			b.mu.Unlock()
			return func() {}
		}
		b.left = time.Until(b.deadline)
	}
	b.paused++
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.paused--
			if b.paused == 0 {
				b.deadline = time.Now().Add(b.left)
				b.timer.Reset(b.left)
			}
		})
	}
}
