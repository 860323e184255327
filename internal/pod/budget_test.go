package pod

import (
	"errors"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

func TestBudgetKeys(t *testing.T) {
	c := mustPod(t, `
cllama-defaults:
  pricing:
    "OpenAI/gpt-4o": {input: 2.50, output: 10, cached-input: 1.25}
budget-defaults: [{limit-usd: 5.00, per: day, soft: 0.8}]
pod-budget: [{limit-requests: 100, per: week, tz: Europe/Paris}, {limit-tokens: '2000000', per: total}]`)
	if p := c.CllamaDefaults.Pricing["openai/gpt-4o"]; p != (manifest.Price{Input: 2_500_000, Output: 10_000_000, CachedInput: 1_250_000, CacheWrite: 2_500_000}) {
		t.Fatalf("pricing %+v", c.CllamaDefaults.Pricing)
	}
	if b := c.BudgetDefaults; len(b) != 1 || b[0] != (manifest.Budget{Unit: "usd", Limit: 5_000_000, Per: "day", Soft: 0.8}) {
		t.Fatalf("budget-defaults %+v", b)
	}
	if b := c.PodBudget; len(b) != 2 || b[0].TZ != "Europe/Paris" || b[1].Limit != 2_000_000 || b[1].Unit != "tokens" {
		t.Fatalf("pod-budget %+v", b)
	}
	s := mustService(t, `{cllama: passthrough, budget: []}`)
	if !s.HasBudget || len(s.Budget) != 0 {
		t.Fatalf("an empty budget: %+v", s)
	}
}

func TestBudgetErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ src, key, want string }{
		{`budget-defaults: {limit-usd: 5}`, "x-claw.budget-defaults", "must be a list"},
		{`budget-defaults: [{per: day}]`, "x-claw.budget-defaults[0]", "no limit"},
		{`budget-defaults: [{limit-usd: 5, limit-tokens: 9, per: day}]`, "x-claw.budget-defaults[0]", "both"},
		{`budget-defaults: [{limit-usd: 0, per: day}]`, "x-claw.budget-defaults[0].limit-usd", "positive"},
		{`budget-defaults: [{limit-usd: -1, per: day}]`, "x-claw.budget-defaults[0].limit-usd", ""},
		{`budget-defaults: [{limit-usd: 1.1234567, per: day}]`, "x-claw.budget-defaults[0].limit-usd", ""},
		{`pod-budget: [{limit-requests: 1.5, per: day}]`, "x-claw.pod-budget[0].limit-requests", "whole number"},
		{`pod-budget: [{limit-requests: 10}]`, "x-claw.pod-budget[0].per", "required"},
		{`pod-budget: [{limit-requests: 10, per: fortnight}]`, "x-claw.pod-budget[0].per", "not a budget window"},
		{`pod-budget: [{limit-requests: 10, per: day, soft: 1.5}]`, "x-claw.pod-budget[0].soft", "between 0 and 1"},
		{`pod-budget: [{limit-requests: 10, per: day, tz: Mars/Olympus}]`, "x-claw.pod-budget[0].tz", "time zone"},
		{`pod-budget: [{limit-requests: 10, per: day, limt: 3}]`, "x-claw.pod-budget[0].limt", ""},
		{`cllama-defaults: {pricing: {gpt-4o: {input: 1, output: 2}}}`, "x-claw.cllama-defaults.pricing.gpt-4o", "no provider"},
		{`cllama-defaults: {pricing: {openai/x: {input: 1}}}`, "x-claw.cllama-defaults.pricing.openai/x.output", "required"},
		{`cllama-defaults: {pricing: {openai/x: {input: 1, output: 2, cached: 1}}}`, "x-claw.cllama-defaults.pricing.openai/x.cached", ""},
		{`cllama-defaults: {pricing: {openai/x: {input: 1e4, output: 2}}}`, "x-claw.cllama-defaults.pricing.openai/x.input", "not a price"},
	} {
		_, err := DecodePodClaw("claw-pod.yml", decodeYAML(t, tc.src))
		var e *Error
		if !errors.As(err, &e) || e.Key != tc.key || e.File != "claw-pod.yml" || e.Fix == "" || !strings.Contains(e.Problem, tc.want) {
			t.Errorf("%s: got %v, want key %s and %q", tc.src, err, tc.key, tc.want)
		}
	}
	_, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, `{cllama: passthrough, budget: [{limit-usd: 1, per: hour, tz: UTC, soft: 0}]}`))
	var e *Error
	if !errors.As(err, &e) || e.Service != "svc" || e.Key != "x-claw.budget[0].soft" {
		t.Fatalf("service budget error %v", err)
	}
}
