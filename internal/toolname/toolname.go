// Package toolname owns the names a pod tool is presented under. A
// tool's canonical name is "<service>.<tool>" (manifest); model providers
// accept only [a-zA-Z0-9_-]{1,64} as a tool name (OpenAI's function
// names; Anthropic refuses a dot), and so do the runners that pass MCP
// tool names on to a model. The mediated path presents managed tools to
// the model, and /mcp lists native tools to the runner, under the same
// provider-safe aliases computed here; every record keeps the canonical
// name.
package toolname

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Safe reports whether name is accepted as a tool name by every provider:
// ^[a-zA-Z0-9_-]{1,64}$. It is a loop, not a regexp compiled as cllama
// starts (the fuzz test holds it to the pattern).
func Safe(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Readable turns "<service>.<tool>" into "<service>__<tool>" with any
// other character outside [a-zA-Z0-9_-] replaced by "_". It may be too
// long to be Safe, and two canonical names may share it: Aliases settles
// both.
func Readable(canonical string) string {
	svc, tool, _ := strings.Cut(canonical, ".")
	return sanitize(svc) + "__" + sanitize(tool)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}

// Hashed is a readable prefix plus a digest of the canonical name: Safe,
// stable and unique for any set of tools.
func Hashed(canonical string) string { return Salted(canonical, "") }

// Salted is Hashed with a salt in the digest, for a second, different
// alias of the same tool.
func Salted(canonical, salt string) string {
	sum := sha256.Sum256([]byte(salt + canonical))
	suffix := "_" + hex.EncodeToString(sum[:5])
	prefix := Readable(canonical)
	if max := 64 - len(suffix); len(prefix) > max {
		prefix = prefix[:max]
	}
	return prefix + suffix
}

// Aliases maps each canonical name to its alias: Readable, unless that is
// not Safe or another name of the set reads the same, then Hashed. The
// map is the caller's.
func Aliases(canonical []string) (map[string]string, error) {
	count := make(map[string]int, len(canonical))
	for _, n := range canonical {
		count[Readable(n)]++
	}
	alias := make(map[string]string, len(canonical))
	taken := make(map[string]string, len(canonical))
	for _, n := range canonical {
		a := Readable(n)
		if count[a] > 1 || !Safe(a) {
			a = Hashed(n)
		}
		if other, ok := taken[a]; ok && other != n {
			return nil, fmt.Errorf("tool %q: alias %q collides with tool %q", n, a, other)
		}
		taken[a] = n
		alias[n] = a
	}
	return alias, nil
}
