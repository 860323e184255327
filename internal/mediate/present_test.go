package mediate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/exchange"
)

// Present renders what the first upstream call of a turn would carry, for
// token counting (issue 12: count the request as cllama would send it):
// the runner's tools kept, the managed tools added, nothing called.
func TestPresentAddsTheManagedTools(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			body := k.runnerRequest(hello, []string{"shell"}, false, nil)
			x := &exchange.Exchange{ID: "count-1", Start: time.Now(), Agent: h.agent, Format: k.format(), Body: body}
			got, err := h.med.Present(context.Background(), x)
			if err != nil {
				t.Fatal(err)
			}
			s := string(got)
			if !strings.Contains(s, `"shell"`) || !strings.Contains(s, echo) {
				t.Fatalf("presented body lacks the runner's or the managed tools: %s", s)
			}
			if n := len(h.up.requests()); n != 0 {
				t.Fatalf("Present called upstream %d times", n)
			}
			// An agent without managed tools counts its body as it is.
			plain := &exchange.Exchange{Agent: &agentctx.Agent{ID: "plain"}, Format: k.format(), Body: body}
			if got, err := h.med.Present(context.Background(), plain); err != nil || string(got) != string(body) {
				t.Fatalf("plain agent: %v %s", err, got)
			}
		})
	}
}
