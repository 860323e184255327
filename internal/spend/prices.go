// Package spend owns what model calls cost and the budgets that cap it:
// the price table (a built-in, dated table for the current models of the
// built-in providers, overridden and extended by the pod's
// x-claw.cllama-defaults.pricing), the cost of one call in integer
// micro-USD from the usage its provider reported, and the budgets of an
// agent and of the pod (USD, requests, tokens per calendar window),
// enforced with reservations so that concurrent calls cannot run past a
// limit, in a ledger kept in a file under CLLAMA_STATE_DIR or in Redis
// (CLLAMA_STATE_URL), shared by replicas.
package spend

import (
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// PricesDate is the day the built-in table's figures were read from the
// providers' public pricing pages (list prices, standard tier, prompts
// under any long-context threshold).
const PricesDate = "2025-11-30"

// usd is a price in USD per 1M tokens, written as cents-exact decimals
// below; m converts it to micro-USD per 1M tokens.
func m(usdPerM float64) int64 { return int64(usdPerM*1_000_000 + 0.5) }

// p is one entry: input, output, cached input (read), cache write.
func p(in, out, cached, write float64) manifest.Price {
	return manifest.Price{Input: m(in), Output: m(out), CachedInput: m(cached), CacheWrite: m(write)}
}

// Builtin is the built-in table, "<provider>/<model prefix>" → price.
// Sources: openai.com/api/pricing, anthropic.com/pricing (cache write is
// the 5-minute rate), ai.google.dev/gemini-api/docs/pricing,
// api-docs.deepseek.com/quick_start/pricing, docs.x.ai/docs/models,
// mistral.ai/pricing; read on PricesDate. Providers whose cache write is
// free list it at the input price (nothing is cheaper than reported).
var Builtin = map[string]manifest.Price{
	"openai/gpt-5":        p(1.25, 10.00, 0.125, 1.25),
	"openai/gpt-5-mini":   p(0.25, 2.00, 0.025, 0.25),
	"openai/gpt-5-nano":   p(0.05, 0.40, 0.005, 0.05),
	"openai/gpt-4.1":      p(2.00, 8.00, 0.50, 2.00),
	"openai/gpt-4.1-mini": p(0.40, 1.60, 0.10, 0.40),
	"openai/gpt-4.1-nano": p(0.10, 0.40, 0.025, 0.10),
	"openai/gpt-4o":       p(2.50, 10.00, 1.25, 2.50),
	"openai/gpt-4o-mini":  p(0.15, 0.60, 0.075, 0.15),
	"openai/o3":           p(2.00, 8.00, 0.50, 2.00),
	"openai/o3-mini":      p(1.10, 4.40, 0.55, 1.10),
	"openai/o4-mini":      p(1.10, 4.40, 0.275, 1.10),

	"anthropic/claude-opus-4-5":   p(5.00, 25.00, 0.50, 6.25),
	"anthropic/claude-opus-4-1":   p(15.00, 75.00, 1.50, 18.75),
	"anthropic/claude-opus-4":     p(15.00, 75.00, 1.50, 18.75),
	"anthropic/claude-sonnet-4-5": p(3.00, 15.00, 0.30, 3.75),
	"anthropic/claude-sonnet-4":   p(3.00, 15.00, 0.30, 3.75),
	"anthropic/claude-3-7-sonnet": p(3.00, 15.00, 0.30, 3.75),
	"anthropic/claude-haiku-4-5":  p(1.00, 5.00, 0.10, 1.25),
	"anthropic/claude-3-5-haiku":  p(0.80, 4.00, 0.08, 1.00),

	"gemini/gemini-2.5-pro":        p(1.25, 10.00, 0.125, 1.25),
	"gemini/gemini-2.5-flash":      p(0.30, 2.50, 0.03, 0.30),
	"gemini/gemini-2.5-flash-lite": p(0.10, 0.40, 0.01, 0.10),
	"google/gemini-2.5-pro":        p(1.25, 10.00, 0.125, 1.25),
	"google/gemini-2.5-flash":      p(0.30, 2.50, 0.03, 0.30),
	"google/gemini-2.5-flash-lite": p(0.10, 0.40, 0.01, 0.10),

	"deepseek/deepseek-chat":     p(0.28, 0.42, 0.028, 0.28),
	"deepseek/deepseek-reasoner": p(0.28, 0.42, 0.028, 0.28),

	"xai/grok-4":      p(3.00, 15.00, 0.75, 3.00),
	"xai/grok-3-mini": p(0.30, 0.50, 0.075, 0.30),

	"mistral/mistral-large": p(2.00, 6.00, 2.00, 2.00),
	"mistral/mistral-small": p(0.10, 0.30, 0.10, 0.10),
}

// Prices is a price table: the built-in one with the pod's entries over
// it. The zero value has no entry.
type Prices struct {
	entries map[string]manifest.Price
}

// NewPrices returns the built-in table with pod's entries added, each
// replacing a built-in entry of the same key.
func NewPrices(pod map[string]manifest.Price) *Prices {
	e := make(map[string]manifest.Price, len(Builtin)+len(pod))
	for k, v := range Builtin {
		e[k] = v
	}
	for k, v := range pod {
		e[strings.ToLower(k)] = v
	}
	return &Prices{entries: e}
}

// Lookup returns the price of "<provider>/<model>": its exact entry, else
// the longest entry that is a prefix of it (a date-suffixed id such as
// claude-sonnet-4-5-20250929 takes claude-sonnet-4-5's). The entry's key
// is returned with it.
func (t *Prices) Lookup(model string) (manifest.Price, string, bool) {
	if t == nil {
		return manifest.Price{}, "", false
	}
	model = strings.ToLower(model)
	if pr, ok := t.entries[model]; ok {
		return pr, model, true
	}
	best, key := manifest.Price{}, ""
	for k, v := range t.entries {
		if len(k) > len(key) && strings.HasPrefix(model, k) {
			best, key = v, k
		}
	}
	return best, key, key != ""
}
