package capability

import (
	"strings"
	"testing"
)

func TestPresentedName(t *testing.T) {
	long := strings.Repeat("s", 40) + "." + strings.Repeat("t", 40)
	for _, tc := range []struct{ in, want string }{
		{"trading-api.get_market_context", "trading-api__get_market_context"},
		{"search.fetch.page", "search__fetch_page"},
		{"my.svc", "my__svc"},
		{"svc.tool:v2", "svc__tool_v2"},
		{"plain", "plain"},
		{"", "_"},
	} {
		if got := PresentedName(tc.in); got != tc.want {
			t.Errorf("PresentedName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	got := PresentedName(long)
	if len(got) != MaxPresentedNameLen || !ValidPresentedName(got) {
		t.Errorf("long name %q (%d) is not a valid 64-char alias", got, len(got))
	}
	if PresentedName(long) != got || PresentedName(long+"x") == got {
		t.Error("long names must map deterministically and stay distinct")
	}
}
