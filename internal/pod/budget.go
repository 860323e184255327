package pod

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// budgetLimitKeys are the keys of a budget entry's limit, one per unit.
var budgetLimitKeys = map[string]string{"limit-usd": manifest.BudgetUSD, "limit-requests": manifest.BudgetRequests, "limit-tokens": manifest.BudgetTokens}

// budget decodes a budget list (x-claw.budget, budget-defaults,
// pod-budget): entries of exactly one limit-usd, limit-requests or
// limit-tokens, a per window, an optional soft fraction and tz zone.
func (d *decoder) budget(key string, v any) ([]manifest.Budget, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, d.errf(key, "write a list of entries such as - {limit-usd: 5.00, per: day}", "must be a list, got %s", typeName(v))
	}
	out := make([]manifest.Budget, 0, len(list))
	for i, e := range list {
		b, err := d.budgetEntry(fmt.Sprintf("%s[%d]", key, i), e)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (d *decoder) budgetEntry(key string, v any) (manifest.Budget, error) {
	var b manifest.Budget
	m, err := d.object(key, v)
	if err != nil {
		return b, err
	}
	if err := d.unknownKeys(key, m, []string{"limit-usd", "limit-requests", "limit-tokens", "per", "soft", "tz"}); err != nil {
		return b, err
	}
	limitKey := ""
	for _, k := range []string{"limit-usd", "limit-requests", "limit-tokens"} {
		if _, ok := m[k]; !ok {
			continue
		}
		if limitKey != "" {
			return b, d.errf(key, "write one limit per entry, and another entry for the other unit", "has both %s and %s", limitKey, k)
		}
		limitKey = k
	}
	if limitKey == "" {
		return b, d.errf(key, "add limit-usd: 5.00, limit-requests: 1000 or limit-tokens: 2000000", "has no limit")
	}
	b.Unit = budgetLimitKeys[limitKey]
	s, err := d.scalar(key+"."+limitKey, m[limitKey])
	if err != nil {
		return b, err
	}
	if b.Unit == manifest.BudgetUSD {
		b.Limit, err = audit.ParseUSD(s)
		if err != nil {
			return b, d.errf(key+"."+limitKey, "write a positive amount in US dollars such as 5.00", "%q: %v", s, err)
		}
	} else if b.Limit, err = strconv.ParseInt(s, 10, 64); err != nil {
		return b, d.errf(key+"."+limitKey, "write a positive whole number", "%q is not a whole number", s)
	}
	if b.Limit <= 0 {
		return b, d.errf(key+"."+limitKey, "write a positive limit (remove the entry for no limit)", "must be positive, got %s", s)
	}
	per, err := d.str(key+".per", m["per"], true)
	if err != nil {
		return b, d.errf(key+".per", "add per: one of "+strings.Join(manifest.BudgetWindows, ", "), "required")
	}
	b.Per = per
	if b.Check() != nil {
		return b, d.errf(key+".per", "write one of "+strings.Join(manifest.BudgetWindows, ", "), "%q is not a budget window", per)
	}
	if raw, ok := m["soft"]; ok && raw != nil {
		f, ok := raw.(float64)
		if !ok || f <= 0 || f >= 1 {
			return b, d.errf(key+".soft", "write a fraction of the limit between 0 and 1, such as 0.8", "must be a number between 0 and 1 (exclusive), got %v", raw)
		}
		b.Soft = f
	}
	if raw, ok := m["tz"]; ok && raw != nil {
		tz, err := d.str(key+".tz", raw, true)
		if err != nil {
			return b, err
		}
		if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
			return b, d.errf(key+".tz", "write an IANA time zone such as Europe/Paris or America/New_York", "%q is not a known time zone", tz)
		}
		if b.Per == "total" || b.Per == "conversation" || b.Per == "minute" {
			return b, d.errf(key+".tz", "remove tz: a "+b.Per+" window has no calendar to align", "has no effect with per: %s", b.Per)
		}
		b.TZ = tz
	}
	return b, nil
}

// pricing decodes x-claw.cllama-defaults.pricing: "<provider>/<model>"
// (or a prefix of such ids) → {input, output, cached-input, cache-write}
// in USD per million tokens. cached-input and cache-write default to
// input (no discount assumed).
func (d *decoder) pricing(key string, v any) (map[string]manifest.Price, error) {
	m, err := d.object(key, v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]manifest.Price, len(m))
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, model := range names {
		mk := key + "." + model
		prov, name, ok := strings.Cut(model, "/")
		if !ok || prov == "" || name == "" {
			return nil, d.errf(mk, `key the price by "<provider>/<model>", such as "openai/gpt-4o"`, "%q names no provider", model)
		}
		e, err := d.object(mk, m[model])
		if err != nil {
			return nil, err
		}
		if err := d.unknownKeys(mk, e, []string{"input", "output", "cached-input", "cache-write"}); err != nil {
			return nil, err
		}
		price := func(k string, required bool, dflt int64) (int64, error) {
			raw, ok := e[k]
			if !ok || raw == nil {
				if required {
					return 0, d.errf(mk+"."+k, "add "+k+": <USD per 1M tokens>", "required")
				}
				return dflt, nil
			}
			s, err := d.scalar(mk+"."+k, raw)
			if err != nil {
				return 0, err
			}
			v, err := audit.ParseUSD(s)
			if err != nil || v < 0 || v > 1000*1_000_000 {
				return 0, d.errf(mk+"."+k, "write US dollars per million tokens, between 0 and 1000, such as 3.00", "%q is not a price", s)
			}
			return v, nil
		}
		var p manifest.Price
		if p.Input, err = price("input", true, 0); err != nil {
			return nil, err
		}
		if p.Output, err = price("output", true, 0); err != nil {
			return nil, err
		}
		if p.CachedInput, err = price("cached-input", false, p.Input); err != nil {
			return nil, err
		}
		if p.CacheWrite, err = price("cache-write", false, p.Input); err != nil {
			return nil, err
		}
		out[strings.ToLower(model)] = p
	}
	return out, nil
}
