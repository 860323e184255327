package manifest

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzValidAgentID holds ValidAgentID to the pattern it stands for.
func FuzzValidAgentID(f *testing.F) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)
	for _, s := range []string{"", "a", "alice", "a-b_c9", "_a", "-a", "a.b", "a/b", "..", "a\n", "é", strings.Repeat("a", 128), strings.Repeat("a", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidAgentID(id), pattern.MatchString(id); got != want {
			t.Fatalf("ValidAgentID(%q) = %v, the pattern says %v", id, got, want)
		}
	})
}
