package sharedstate

import (
	"context"
	"strings"
	"testing"
)

// hostileStateURLs are malformed or unreachable state URLs, each with the
// secret it carries.
var hostileStateURLs = []struct{ url, secret string }{
	{"redis://user:secret@host:port:bad/0", "secret"},
	{"redis://:secret@[::1", "secret"},
	{"rediss://u:p%zz@h", "p%zz"},
	{"rediss://u:p%zz@h", "%zz"},
	{"redis://u:secret@127.0.0.1:1/x", "secret"},
	{"redis://u:secret@127.0.0.1:1/0?foo=bar", "secret"},
	{"redis://u:secret@127.0.0.1:1/0?dial_timeout=zz", "secret"},
	{"redis://u:secret@127.0.0.1:1/0/1", "secret"},
	{"http://u:secret@127.0.0.1:1", "secret"},
	{"redis:u:secret@127.0.0.1:1", "secret"},
	{"redis://u:sec ret@127.0.0.1:1", "sec ret"},
	{"redis://u:secret@127.0.0.1:1/0", "secret"},
}

// No error of Open shows the password of the URL it was given, however
// malformed the URL.
func TestHostileStateURLErrorsHideThePassword(t *testing.T) {
	for _, c := range hostileStateURLs {
		_, err := Open(context.Background(), c.url)
		if err == nil {
			t.Fatalf("%s: no error", c.url)
		}
		if msg := err.Error(); strings.Contains(msg, c.secret) || !strings.Contains(msg, "CLLAMA_STATE_URL") {
			t.Errorf("%s: %s", c.url, msg)
		}
	}
}
