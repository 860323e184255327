package feeds

import (
	"bytes"
	"encoding/json"
	"mime"
	"strings"
	"time"
	"unicode/utf8"
)

// snapshot is one good fetch of a feed, ready to render. It is immutable once
// built: the cache and concurrent requests share it.
type snapshot struct {
	// content is the body with frontmatter removed, outer blank lines
	// trimmed, invalid UTF-8 replaced and frame-like lines neutralised.
	content string
	// json marks content to be shown in a fenced json block.
	json bool
	// bytes is the size of the body as received (up to the read limit).
	bytes int
	// readLimited marks a body that exceeded Options.MaxBodyBytes; content
	// holds its first MaxBodyBytes.
	readLimited bool
	// refreshed is the frontmatter's refreshed time, else fetchedAt.
	refreshed time.Time
	fetchedAt time.Time
	// ttl is how long the snapshot is fresh: the frontmatter's ttl when
	// present, else the manifest's.
	ttl time.Duration
}

var bom = []byte("\xef\xbb\xbf")

// newSnapshot turns a 2xx feed body into a snapshot (spec 003 "Feed endpoints
// return plain text or markdown. JSON is allowed; cllama wraps it in a fenced
// block").
func newSnapshot(body []byte, contentType string, readLimited bool, manifestTTL time.Duration, now time.Time) *snapshot {
	s := &snapshot{bytes: len(body), readLimited: readLimited, refreshed: now, fetchedAt: now, ttl: manifestTTL}
	body = bytes.TrimPrefix(body, bom)
	if fm, rest, ok := parseFrontmatter(body); ok {
		body = rest
		if !fm.Refreshed.IsZero() {
			s.refreshed = fm.Refreshed
		}
		if fm.HasTTL {
			s.ttl = fm.TTL
		}
	}
	text := trimBlankLines(string(body))
	s.json = isJSON(contentType, text, readLimited)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	s.content = neutraliseFrames(text)
	return s
}

// isJSON decides by media type first: a JSON type (application/json,
// anything+json) is fenced; text/markdown is never. Otherwise a body that
// parses as a JSON object or array is fenced.
func isJSON(contentType, text string, readLimited bool) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return true
	case mt == "text/markdown" || mt == "text/x-markdown":
		return false
	case readLimited || text == "":
		return false
	}
	if c := text[0]; c != '{' && c != '[' {
		return false
	}
	return json.Valid([]byte(text))
}

// trimBlankLines removes leading blank lines and trailing white space, but
// keeps the indentation of the first line (markdown code, tables).
func trimBlankLines(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	for {
		line, rest, found := strings.Cut(s, "\n")
		if !found || strings.TrimSpace(line) != "" {
			return s
		}
		s = rest
	}
}

// neutraliseFrames indents, by one space, any line of feed content that could
// be read as a feed frame, so a service cannot close its own block and forge
// another one.
func neutraliseFrames(s string) string {
	if !strings.Contains(s, "--- BEGIN FEED:") && !strings.Contains(s, "--- END FEED:") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, "--- BEGIN FEED:") || strings.HasPrefix(line, "--- END FEED:") {
			b.WriteByte(' ')
		}
		b.WriteString(line)
	}
	return b.String()
}
