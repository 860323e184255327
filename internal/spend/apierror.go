package spend

import (
	"time"

	"github.com/clawdapus/clawgo/internal/wire/apierror"
)

// APIError is the refusal as the runner reads it: 402 budget_exceeded or
// 403 budget_unenforceable, the budget's fields in the error object, and
// Retry-After when its window resets (now is the time of the refusal).
func (r *Refusal) APIError(now time.Time) *apierror.Error {
	e := &apierror.Error{Status: r.Status, Type: r.Type, Message: r.Error(), Fields: r.Fields()}
	e.RetryAfter, _ = r.RetryAfter(now)
	return e
}
