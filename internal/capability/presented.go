package capability

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// MaxPresentedNameLen is the longest tool name the providers accept
// (OpenAI and Anthropic both require ^[a-zA-Z0-9_-]{1,64}$).
const MaxPresentedNameLen = 64

var presentedPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidPresentedName reports whether s is acceptable to the providers as a
// tool name.
func ValidPresentedName(s string) bool { return presentedPattern.MatchString(s) }

// PresentedName maps a canonical tool name "<service>.<tool>" to the alias
// models see, which providers require to match ^[a-zA-Z0-9_-]{1,64}$.
//
// The rule, applied in order:
//  1. the first "." (between service and tool) becomes "__";
//  2. every other character outside [a-zA-Z0-9_-] becomes "_";
//  3. if the result is longer than 64 characters it is cut to 53 and
//     "_" plus the first 10 hex digits of SHA-256(canonical) are appended,
//     so long names stay distinct (the same form cllama's mediation uses).
//
// For example "trading-api.get_market_context" is presented as
// "trading-api__get_market_context". The mapping is deterministic; the
// compiler rejects two canonical names of one agent that map to the same
// alias. A canonical name without a dot is only sanitised.
func PresentedName(canonical string) string {
	var b strings.Builder
	b.Grow(len(canonical) + 1)
	service, tool, found := strings.Cut(canonical, ".")
	writeSanitised(&b, service)
	if found {
		b.WriteString("__")
		writeSanitised(&b, tool)
	}
	s := b.String()
	if s == "" {
		s = "_"
	}
	if len(s) > MaxPresentedNameLen {
		sum := sha256.Sum256([]byte(canonical))
		suffix := "_" + hex.EncodeToString(sum[:5])
		s = s[:MaxPresentedNameLen-len(suffix)] + suffix
	}
	return s
}

func writeSanitised(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
}
