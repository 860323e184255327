package mediate

import (
	"context"
	"io"
	"net/http"
	"testing"
)

// A mediated request refused before the loop starts (a body no format
// can parse: its conversation is a number) still ends in the audit trail: the proxy logged its
// request event, and every refused request is an error event (README
// "Audit").
func TestRefusedMediatedRequestIsAnAuditError(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			res := h.post(context.Background(), []byte(`{"model":"up-model","max_tokens":5,"messages":5,"input":5}`))
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			for _, e := range h.audit.events() {
				if e.Type == "error" && e.StatusCode == http.StatusBadRequest && e.RequestID != "" && e.ClawID == "analyst-0" {
					return
				}
			}
			t.Fatalf("no audit error event for the refused request: %+v", h.audit.events())
		})
	}
}
