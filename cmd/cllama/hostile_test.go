package main

import (
	"bytes"
	"strings"
	"testing"
)

// A malformed or unreachable CLLAMA_STATE_URL stops cllama naming the
// setting, and nothing it prints shows the URL's password.
func TestHostileStateURLPasswordNeverOnStderr(t *testing.T) {
	for _, c := range []struct{ url, secret string }{
		{"redis://user:secret@host:port:bad/0", "secret"},
		{"redis://:secret@[::1", "secret"},
		{"rediss://u:p%zz@h", "%zz"},
		{"redis://u:secret@127.0.0.1:1/0", "secret"},
	} {
		var stdout, stderr bytes.Buffer
		env := []string{"CLAW_AUTH_DIR=" + t.TempDir(), "CLAW_CONTEXT_ROOT=" + t.TempDir(), "CLLAMA_STATE_URL=" + c.url}
		if code := run([]string{"-listen", "127.0.0.1:0"}, env, &stdout, &stderr); code == 0 {
			t.Fatalf("%s: cllama started", c.url)
		}
		out := stderr.String() + stdout.String()
		if strings.Contains(out, c.secret) || !strings.Contains(out, "CLLAMA_STATE_URL") {
			t.Errorf("%s: printed %q", c.url, out)
		}
	}
}
