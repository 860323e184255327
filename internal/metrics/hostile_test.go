package metrics

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
)

// TestHostileInventedToolNamesAddNoLabels: a model response naming 600
// tools nobody granted is answered (unknown_tool, or too_many_calls past
// the per-round cap, before the name is resolved); before the fix the
// calls past the cap were recorded under the model's own names, one label
// value each, growing /metrics with every such turn.
func TestHostileInventedToolNamesAddNoLabels(t *testing.T) {
	s := New(Options{})
	s.Event(&audit.Event{Type: audit.TypeToolCall, ClawID: "a", Tool: "svc.real", Service: "svc", Status: "ok", Mode: "mediated"})
	for i := range 600 {
		status := "unknown_tool"
		if i >= 32 {
			status = "too_many_calls"
		}
		s.Event(&audit.Event{Type: audit.TypeToolCall, ClawID: "a", Tool: fmt.Sprintf("made_up_%d\nforged 1", i), Status: status, Mode: "mediated"})
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	tools := map[string]bool{}
	for _, ln := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(ln, "cllama_tool_calls_total{") {
			continue
		}
		i := strings.Index(ln, `tool="`)
		j := strings.Index(ln[i+6:], `"`)
		tools[ln[i+6:i+6+j]] = true
	}
	if len(tools) != 2 || !tools["svc.real"] || !tools[Unknown] {
		t.Fatalf("tool label values %v; want svc.real and %s", tools, Unknown)
	}
}
