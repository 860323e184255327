package toolexec

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/jsontop"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// Messages in envelopes reach the model, so nothing of a service's address
// or credentials may appear in them (spec 000: the mediated path "hides
// service URL and credential details from the agent"). Messages are built
// from our own words where possible; scrub is the backstop for any text that
// came from elsewhere (an error string, a service's error body).

var (
	urlPattern    = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>]+`)
	bearerPattern = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+`)
	authzPattern  = regexp.MustCompile(`(?i)(authorization|x-api-key|api[_-]?key|token)(["']?\s*[:=]\s*["']?)[^\s"',}]+`)
)

// scrubber removes one call's secrets and addresses from text. It is
// cheap to make: the work is done on first use, which only failures need.
type scrubber struct {
	exec *manifest.Execution
	auth *manifest.Auth

	ready   bool
	service string
	baseURL string
	secrets []string // replaced by [redacted]
	hosts   []string // replaced by the service name
}

func newScrubber(exec *manifest.Execution, auth *manifest.Auth) scrubber {
	return scrubber{exec: exec, auth: auth}
}

func (s *scrubber) init() {
	if s.ready {
		return
	}
	s.ready = true
	exec := s.exec
	s.service = serviceName(exec)
	s.baseURL = strings.TrimRight(exec.BaseURL, "/")
	for _, a := range []*manifest.Auth{s.auth, exec.Auth} {
		if a != nil && len(a.Token) >= 4 {
			s.secrets = append(s.secrets, a.Token)
		}
	}
	if u, err := url.Parse(exec.BaseURL); err == nil && u.Host != "" {
		s.hosts = append(s.hosts, u.Host)
		if h := u.Hostname(); h != "" && h != exec.Service && len(h) >= 3 {
			s.hosts = append(s.hosts, h)
		}
	}
}

// serviceName is how messages name the service: its compose name.
func serviceName(exec *manifest.Execution) string {
	if exec.Service == "" {
		return "service"
	}
	return exec.Service
}

// scrub returns text with URLs, credentials and the service's address
// replaced.
func (s *scrubber) scrub(text string) string {
	s.init()
	for _, secret := range s.secrets {
		text = strings.ReplaceAll(text, secret, "[redacted]")
	}
	text = urlPattern.ReplaceAllString(text, "[url]")
	text = bearerPattern.ReplaceAllString(text, "$1 [redacted]")
	text = authzPattern.ReplaceAllString(text, "$1$2[redacted]")
	for _, h := range s.hosts {
		text = strings.ReplaceAll(text, h, s.service)
	}
	return text
}

// scrubKnown removes only this call's credentials and service address,
// leaving other text (and other URLs) as written.
func (s *scrubber) scrubKnown(text string) string {
	s.init()
	for _, secret := range s.secrets {
		text = strings.ReplaceAll(text, secret, "[redacted]")
	}
	if s.baseURL != "" {
		text = strings.ReplaceAll(text, s.baseURL, "[service]")
	}
	for _, h := range s.hosts {
		text = strings.ReplaceAll(text, h, s.service)
	}
	return text
}

// redact removes this call's credentials from a successful result: a
// service that echoes its request (a debug or echo endpoint) must not hand
// the model the bearer it was called with. In JSON the credential is looked
// for as written and as encoding/json escapes it; a replacement that would
// not leave valid JSON turns the result into text.
func (s *scrubber) redact(r result) result {
	s.init()
	for _, secret := range s.secrets {
		if r.isText {
			r.text = strings.ReplaceAll(r.text, secret, "[redacted]")
			continue
		}
		out := r.json
		for _, form := range secretForms(secret) {
			out = bytes.ReplaceAll(out, []byte(form), []byte("[redacted]"))
		}
		if bytes.Equal(out, r.json) {
			continue
		}
		if canon, ok := jsontop.Canonical(out); ok {
			r.json = canon
			continue
		}
		r.text, r.isText, r.json = string(out), true, nil
	}
	return r
}

// secretForms is a secret as it may appear inside JSON text: raw, and as
// encoding/json (HTML-safe) writes it in a string.
func secretForms(secret string) []string {
	forms := []string{secret}
	if q := jsontop.AppendString(nil, secret); len(q) >= 2 {
		if esc := string(q[1 : len(q)-1]); esc != secret {
			forms = append(forms, esc)
		}
	}
	return forms
}

// snippet bounds text to at most n bytes (cut on a rune boundary) and
// collapses whitespace so a service's error page reads as one line.
func snippet(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= n {
		return text
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}
