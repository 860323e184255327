package manifest

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzValidNames holds ValidServiceName and ValidToolName to the patterns
// they stand for.
func FuzzValidNames(f *testing.F) {
	service := regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	tool := regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}$`)
	for _, s := range []string{"", "a", "desk", "get_stock", "a.b-c_9", "_a", ".a", "-a", "a/b", "a b", "a\n", "é", "Ω.x",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "_" + strings.Repeat("b", 127)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidServiceName(s), service.MatchString(s); got != want {
			t.Fatalf("ValidServiceName(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := ValidToolName(s), tool.MatchString(s); got != want {
			t.Fatalf("ValidToolName(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
