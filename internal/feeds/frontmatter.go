package feeds

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// frontmatter is the optional header of a feed body (spec 003 "Feeds may
// include frontmatter"):
//
//	---
//	feed: fleet-alerts
//	refreshed: 2026-03-19T14:32:00Z
//	ttl: 60
//	---
type frontmatter struct {
	Feed string
	// Refreshed is zero when absent or not RFC 3339.
	Refreshed time.Time
	// TTL is valid when HasTTL; it overrides the manifest TTL for the fetch
	// that carried it.
	TTL    time.Duration
	HasTTL bool
}

const (
	// maxFrontmatterBytes bounds the search for the closing delimiter: a
	// body that opens with "---" but does not close it soon is markdown
	// (a horizontal rule), not frontmatter.
	maxFrontmatterBytes = 4 << 10
	// maxFrontmatterTTL clamps a service's ttl hint: a hint may lengthen
	// caching, but not freeze a feed for longer than a day.
	maxFrontmatterTTL = 24 * time.Hour
)

// parseFrontmatter splits an optional frontmatter block off the start of a
// feed body. It reports ok=false, and returns body unchanged, unless body
// starts with a "---" line, every line up to a closing "---" line is a
// "key: value" pair, an indented continuation, a comment or blank, and the
// closing line comes within maxFrontmatterBytes. Unknown keys are ignored, as
// are values that do not parse; the last of duplicate keys wins. rest aliases
// body.
func parseFrontmatter(body []byte) (fm frontmatter, rest []byte, ok bool) {
	line, next, found := cutLine(body)
	if !found || !isDelimiter(line) {
		return frontmatter{}, body, false
	}
	i := next
	for {
		if i > maxFrontmatterBytes {
			return frontmatter{}, body, false
		}
		line, n, hasNL := cutLine(body[i:])
		if isDelimiter(line) {
			return fm, body[i+n:], true
		}
		if !hasNL {
			// The body ended inside the block: not frontmatter.
			return frontmatter{}, body, false
		}
		i += n
		text := strings.TrimRight(string(line), " \t\r")
		switch {
		case text == "", text[0] == '#':
			continue
		case text[0] == ' ' || text[0] == '\t':
			continue // a nested YAML value; no key we read is nested
		}
		key, value, isPair := strings.Cut(text, ":")
		if !isPair || !isKey(key) {
			return frontmatter{}, body, false
		}
		fm.set(key, unquote(value))
	}
}

func (fm *frontmatter) set(key, value string) {
	switch strings.ToLower(key) {
	case "feed":
		fm.Feed = value
	case "refreshed":
		if t, err := time.Parse(time.RFC3339, value); err == nil {
			fm.Refreshed = t
		} else {
			fm.Refreshed = time.Time{}
		}
	case "ttl":
		fm.TTL, fm.HasTTL = parseTTL(value)
	}
}

// parseTTL accepts whole seconds ("60") or a Go duration ("90s", "5m").
func parseTTL(v string) (time.Duration, bool) {
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(maxFrontmatterTTL/time.Second) {
			return maxFrontmatterTTL, true
		}
		d = time.Duration(n) * time.Second
	} else if pd, err := time.ParseDuration(v); err == nil && pd >= 0 {
		d = min(pd, maxFrontmatterTTL)
	} else {
		return 0, false
	}
	return d, true
}

// cutLine returns the first line of b without its "\n", the number of bytes
// it occupies including the "\n", and whether a "\n" ended it.
func cutLine(b []byte) (line []byte, n int, nl bool) {
	if j := bytes.IndexByte(b, '\n'); j >= 0 {
		return b[:j], j + 1, true
	}
	return b, len(b), false
}

func isDelimiter(line []byte) bool {
	return string(bytes.TrimRight(line, " \t\r")) == "---"
}

func isKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, c := range []byte(k) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// unquote trims a scalar value: surrounding spaces, one pair of matching
// quotes, or else a trailing " # comment".
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	if j := strings.Index(v, " #"); j >= 0 {
		v = strings.TrimSpace(v[:j])
	}
	return v
}
