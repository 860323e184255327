package history

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzValidReplica holds validReplica to the pattern it stands for.
func FuzzValidReplica(f *testing.F) {
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)
	for _, s := range []string{"", "cllama-0", "a.b_c", "..", "a/b", "a b", "a\n", "é", strings.Repeat("a", 64), strings.Repeat("a", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validReplica(s), pattern.MatchString(s); got != want {
			t.Fatalf("validReplica(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
