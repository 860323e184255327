package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/keypool"
)

// TestKeyAndCircuitMetrics: the pools' state is scraped, keys by id, and
// each fallback step counts by from, to and reason.
func TestKeyAndCircuitMetrics(t *testing.T) {
	s := New(Options{KeyPools: func() []keypool.ProviderState {
		return []keypool.ProviderState{{Provider: "openai", Circuit: keypool.Open,
			Keys: []keypool.KeyState{{ID: "key-1", State: keypool.KeyCooling}, {ID: "key-2", State: keypool.KeyActive}}}}
	}})
	s.Event(&audit.Event{Type: audit.TypeFallback, FallbackFrom: "openai/gpt-4o", Model: "openrouter/openai/gpt-4o", FallbackReason: "rate_limited"})
	s.Event(&audit.Event{Type: audit.TypeFallback, FallbackFrom: "openai/gpt-4o", Model: "openrouter/openai/gpt-4o", FallbackReason: "rate_limited"})
	mfs, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "cllama_fallbacks") && !strings.HasPrefix(mf.GetName(), "cllama_key_state") && !strings.HasPrefix(mf.GetName(), "cllama_provider_circuit") {
			continue
		}
		for _, m := range mf.GetMetric() {
			line := mf.GetName()
			for _, l := range m.GetLabel() {
				line += " " + l.GetName() + "=" + l.GetValue()
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			got = append(got, fmt.Sprintf("%s %g", line, v))
		}
	}
	want := []string{
		"cllama_fallbacks_total from=openai/gpt-4o reason=rate_limited to=openrouter/openai/gpt-4o 2",
		"cllama_key_state key=key-1 provider=openai 1",
		"cllama_key_state key=key-2 provider=openai 0",
		"cllama_provider_circuit_state provider=openai 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
