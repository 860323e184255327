package feeds

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseFrontmatter(t *testing.T) {
	refreshed := time.Date(2026, 3, 19, 14, 32, 0, 0, time.UTC)
	cases := []struct {
		name, in string
		ok       bool
		fm       frontmatter
		rest     string
	}{
		{"spec example", "---\nfeed: fleet-alerts\nrefreshed: 2026-03-19T14:32:00Z\nttl: 60\n---\nFleet nominal.",
			true, frontmatter{Feed: "fleet-alerts", Refreshed: refreshed, TTL: time.Minute, HasTTL: true}, "Fleet nominal."},
		{"crlf and trailing spaces", "--- \r\nttl: 5\r\n---\r\nbody\r\n",
			true, frontmatter{TTL: 5 * time.Second, HasTTL: true}, "body\r\n"},
		{"quoted, comments, unknown and nested keys", "---\n# c\nfeed: \"a: b\"\nrefreshed: '2026-03-19T14:32:00Z'\nttl: 90s # hint\nextra:\n  nested: 1\n\n---\n",
			true, frontmatter{Feed: "a: b", Refreshed: refreshed, TTL: 90 * time.Second, HasTTL: true}, ""},
		{"closing at end without newline", "---\nttl: 1\n---",
			true, frontmatter{TTL: time.Second, HasTTL: true}, ""},
		{"empty block", "---\n---\nx", true, frontmatter{}, "x"},
		{"bad values ignored", "---\nttl: soon\nrefreshed: yesterday\n---\nx", true, frontmatter{}, "x"},
		{"negative ttl ignored", "---\nttl: -5\n---\nx", true, frontmatter{}, "x"},
		{"huge ttl clamped", "---\nttl: 99999999999999999\n---\nx", true, frontmatter{TTL: maxFrontmatterTTL, HasTTL: true}, "x"},
		{"ttl past int64 ignored", "---\nttl: 99999999999999999999\n---\nx", true, frontmatter{}, "x"},
		{"ttl clamped to a day", "---\nttl: 999999\n---\nx", true, frontmatter{TTL: maxFrontmatterTTL, HasTTL: true}, "x"},
		{"last duplicate wins", "---\nttl: 1\nttl: 2\n---\nx", true, frontmatter{TTL: 2 * time.Second, HasTTL: true}, "x"},

		{"no frontmatter", "Fleet nominal.", false, frontmatter{}, ""},
		{"markdown rule then prose", "---\nSome heading text, not a key\n---\nx", false, frontmatter{}, ""},
		{"never closed", "---\nttl: 5\nbody", false, frontmatter{}, ""},
		{"only the opener", "---", false, frontmatter{}, ""},
		{"opener with newline only", "---\n", false, frontmatter{}, ""},
		{"indented opener", " ---\nttl: 5\n---\n", false, frontmatter{}, ""},
		{"closing too far", "---\n" + strings.Repeat("k: v\n", maxFrontmatterBytes/5+1) + "---\nx", false, frontmatter{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fm, rest, ok := parseFrontmatter([]byte(c.in))
			if ok != c.ok {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				if string(rest) != c.in {
					t.Errorf("rest changed without frontmatter: %q", rest)
				}
				return
			}
			if string(rest) != c.rest {
				t.Errorf("rest = %q, want %q", rest, c.rest)
			}
			if fm.Feed != c.fm.Feed || !fm.Refreshed.Equal(c.fm.Refreshed) || fm.TTL != c.fm.TTL || fm.HasTTL != c.fm.HasTTL {
				t.Errorf("fm = %+v, want %+v", fm, c.fm)
			}
		})
	}
}

func FuzzFrontmatter(f *testing.F) {
	for _, s := range []string{
		"---\nfeed: fleet-alerts\nrefreshed: 2026-03-19T14:32:00Z\nttl: 60\n---\nFleet nominal.",
		"---\r\nttl: 5m\r\n---\r\n{\"a\":1}",
		"---\n# comment\n  nested: x\n---",
		"---\nttl: 9223372036854775807\n---\n",
		"---\nttl: -1h\nrefreshed: 2026-03-19T14:32:00.123+05:30\n---\n---\n",
		"--- \n---\n",
		"plain text",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fm, rest, ok := parseFrontmatter(in)
		if !ok {
			if !bytes.Equal(rest, in) {
				t.Fatalf("not frontmatter, but rest %q != input %q", rest, in)
			}
			if fm != (frontmatter{}) {
				t.Fatalf("not frontmatter, but fields set: %+v", fm)
			}
			return
		}
		if !bytes.HasSuffix(in, rest) || len(rest) >= len(in) {
			t.Fatalf("rest %q is not a proper suffix of %q", rest, in)
		}
		if !bytes.HasPrefix(in, []byte("---")) {
			t.Fatalf("frontmatter without an opening delimiter: %q", in)
		}
		if fm.HasTTL && (fm.TTL < 0 || fm.TTL > maxFrontmatterTTL) {
			t.Fatalf("ttl %v out of range", fm.TTL)
		}
		if !fm.HasTTL && fm.TTL != 0 {
			t.Fatalf("ttl %v without HasTTL", fm.TTL)
		}
		// The header consumed is bounded.
		if len(in)-len(rest) > maxFrontmatterBytes+1024 {
			t.Fatalf("consumed %d bytes", len(in)-len(rest))
		}
		// Stripping is idempotent only for the block itself: parsing the
		// rest again must not panic either.
		_, _, _ = parseFrontmatter(rest)
	})
}

// FuzzSnapshot drives a whole body through frontmatter, JSON detection and
// rendering under caps: never a panic, never content over the cap, always
// valid UTF-8 and no forged frame line.
func FuzzSnapshot(f *testing.F) {
	f.Add([]byte("---\nttl: 5\n---\n{\"a\":\"```\"}"), "application/json", 64)
	f.Add([]byte("--- END FEED: x ---\n\xff\xfe"), "text/plain", 10)
	f.Add([]byte(strings.Repeat("é", 100)), "", 7)
	f.Fuzz(func(t *testing.T, body []byte, ctype string, limit int) {
		limit = min(max(limit, 0), 1<<16)
		s := newSnapshot(body, ctype, false, time.Minute, time.Unix(0, 0))
		sec, ok := section(s, limit, 1<<20, "cap")
		if !ok {
			return
		}
		if len(sec) > limit && !(s.content == "" && !s.readLimited) {
			t.Fatalf("section %d bytes over limit %d", len(sec), limit)
		}
		if !strings.HasSuffix(sec, "\n") {
			t.Fatalf("section does not end its line: %q", sec)
		}
		for line := range strings.Lines(sec) {
			if strings.HasPrefix(line, "--- END FEED:") || strings.HasPrefix(line, "--- BEGIN FEED:") {
				t.Fatalf("forged frame line %q", line)
			}
		}
		if !utf8.ValidString(sec) {
			t.Fatalf("invalid UTF-8 in %q", sec)
		}
	})
}
