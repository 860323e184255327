package spend

import (
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/wire"
)

// maxTokens bounds each count of a usage report (a provider reporting
// more is read as this many), and MaxPriceUSD a price: their products
// summed cannot overflow an int64.
const (
	maxTokens   = 1<<31 - 1
	MaxPriceUSD = 1000 // per million tokens
)

func clampTokens(n int) int64 {
	switch {
	case n < 0:
		return 0
	case n > maxTokens:
		return maxTokens
	}
	return int64(n)
}

// Cost is what usage u costs at price pr, in micro-USD, rounded up to
// the micro-dollar. Uncached input is priced as input, cached input
// (OpenAI's cached_tokens, counted inside its prompt_tokens; Anthropic's
// cache_read_input_tokens) as cached input, Anthropic's
// cache_creation_input_tokens as cache write, and output (reasoning
// tokens included, as providers report them) as output.
func Cost(pr manifest.Price, u wire.Usage) int64 {
	cachedIn := clampTokens(u.CachedInput)
	in := clampTokens(u.Input) - cachedIn
	if in < 0 {
		in = 0
	}
	read := clampTokens(u.CacheRead) + cachedIn
	perM := in*pr.Input + read*pr.CachedInput + clampTokens(u.CacheCreation)*pr.CacheWrite + clampTokens(u.Output)*pr.Output
	return (perM + 999_999) / 1_000_000
}

// Tokens is what usage u counts against a tokens budget: every prompt
// token (cached ones included) and every output token.
func Tokens(u wire.Usage) int64 {
	return clampTokens(u.Input) + clampTokens(u.CacheCreation) + clampTokens(u.CacheRead) + clampTokens(u.Output)
}
