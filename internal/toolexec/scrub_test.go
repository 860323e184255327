package toolexec

import (
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

func TestScrub(t *testing.T) {
	exec := &manifest.Execution{Service: "trading-api", BaseURL: "http://10.1.2.3:4000/base", Auth: &manifest.Auth{Type: "bearer", Token: "descriptor-tok"}}
	sc := newScrubber(exec, &manifest.Auth{Type: "bearer", Token: "projected-tok"})
	in := `Post "http://10.1.2.3:4000/base/api?x=1": dial tcp 10.1.2.3:4000: refused; ` +
		`Authorization: Bearer abc.def-ghi; token=projected-tok; {"api_key":"k-123"}; descriptor-tok; see https://other.example/x`
	out := sc.scrub(in)
	for _, leak := range []string{"10.1.2.3", "4000", "abc.def-ghi", "projected-tok", "descriptor-tok", "k-123", "http://", "https://"} {
		if strings.Contains(out, leak) {
			t.Errorf("scrub left %q in %q", leak, out)
		}
	}
	if !strings.Contains(out, "refused") || !strings.Contains(out, "trading-api") {
		t.Errorf("scrub removed too much: %q", out)
	}

	// Deliberate tool text keeps other URLs but loses ours.
	known := sc.scrubKnown("fetch http://10.1.2.3:4000/base/x failed with projected-tok; docs at https://docs.example/y")
	if strings.Contains(known, "10.1.2.3") || strings.Contains(known, "projected-tok") || !strings.Contains(known, "https://docs.example/y") {
		t.Errorf("scrubKnown = %q", known)
	}
}

func TestSnippet(t *testing.T) {
	if got := snippet("  a \n\t b  ", 10); got != "a b" {
		t.Errorf("snippet = %q", got)
	}
	got := snippet(strings.Repeat("é", 100), 11)
	if !strings.HasSuffix(got, "…") || len(got) > 11+len("…") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("snippet = %q", got)
	}
}
