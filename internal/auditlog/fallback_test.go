package auditlog

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
)

// TestFallbacksListed: claw audit lists each fallback step, escaping what
// a runner named (the model) before it reaches the terminal.
func TestFallbacksListed(t *testing.T) {
	var b bytes.Buffer
	writeFallbacks(&b, []Record{
		{Event: audit.Event{TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), ClawID: "alice", Type: audit.TypeFallback,
			FallbackFrom: "openai/gpt-4o\x1b[2J", Model: "openrouter/openai/gpt-4o", FallbackReason: "rate_limited", StatusCode: 429}},
		{Event: audit.Event{Type: audit.TypeResponse}},
	})
	out := b.String()
	if !strings.Contains(out, "fallbacks (1):") || !strings.Contains(out, "alice") || !strings.Contains(out, "-> openrouter/openai/gpt-4o  rate_limited (429)") {
		t.Fatalf("%q", out)
	}
	if strings.Contains(out, "\x1b") {
		t.Fatalf("an escape reached the terminal: %q", out)
	}
}
