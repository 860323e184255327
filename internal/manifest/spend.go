package manifest

import "fmt"

// Price is what a model costs, in micro-USD per million tokens (USD per
// 1M tokens × 1,000,000): integers, so costs add up exactly. Input is the
// uncached prompt, CachedInput the prompt read from the provider's cache,
// CacheWrite the prompt written to it (Anthropic's cache creation), Output
// the completion (reasoning tokens included).
type Price struct {
	Input       int64 `json:"input"`
	Output      int64 `json:"output"`
	CachedInput int64 `json:"cached_input"`
	CacheWrite  int64 `json:"cache_write"`
}

// Budget units.
const (
	BudgetUSD      = "usd"
	BudgetRequests = "requests"
	BudgetTokens   = "tokens"
)

// BudgetWindows are the values of a budget's per, in the order they are
// listed to operators.
var BudgetWindows = []string{"minute", "hour", "day", "week", "month", "conversation", "total"}

// Budget is one compiled budget entry (x-claw.budget, budget-defaults,
// pod-budget): a limit of one unit per window.
type Budget struct {
	// Unit is usd, requests or tokens.
	Unit string `json:"unit"`
	// Limit is in micro-USD for usd, else a count.
	Limit int64 `json:"limit"`
	// Per is one of BudgetWindows.
	Per string `json:"per"`
	// Soft, when set (0 < soft < 1), is the fraction of Limit at which a
	// budget_warning is raised, once per window.
	Soft float64 `json:"soft,omitempty"`
	// TZ is the IANA zone the calendar windows are aligned in; empty: UTC.
	TZ string `json:"tz,omitempty"`
}

// Check reports what is wrong with a compiled budget entry (the compiler
// has already checked the pod file; this guards a hand-edited file).
func (b Budget) Check() error {
	switch b.Unit {
	case BudgetUSD, BudgetRequests, BudgetTokens:
	default:
		return fmt.Errorf("unit %q: must be usd, requests or tokens", b.Unit)
	}
	if b.Limit <= 0 {
		return fmt.Errorf("limit: must be positive, got %d", b.Limit)
	}
	ok := false
	for _, w := range BudgetWindows {
		ok = ok || w == b.Per
	}
	if !ok {
		return fmt.Errorf("per %q: must be one of %v", b.Per, BudgetWindows)
	}
	if b.Soft < 0 || b.Soft >= 1 {
		return fmt.Errorf("soft: must be between 0 and 1, got %v", b.Soft)
	}
	return nil
}
