package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/clawdapus/clawgo/internal/history"
)

// The edge tells history which requests it found plain (ASCII, on one
// line) in the pass that validated them, and history writes those as they
// came without scanning them again. Every other request is still checked
// there: whatever a runner sends, each history line is one line of valid
// UTF-8 and valid JSON, a plain request is kept byte for byte, and bytes
// that were not UTF-8 are replaced and counted.
func TestHistoryKeepsRequestsAsSent(t *testing.T) {
	p := newPod(t)
	long := strings.Repeat("lorem ipsum dolor ", 8<<10)
	cases := []struct {
		name, body string
		replaced   int
		verbatim   bool
	}{
		{"plain", `{"model":"fake/gpt-fake","messages":[{"role":"user","content":"` + long + `"}]}`, 0, true},
		{"invalid UTF-8", "{\"model\":\"fake/gpt-fake\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9 " + long + "\"}]}", 1, false},
		{"not ASCII, on lines", "{\n  \"model\": \"fake/gpt-fake\",\n  \"messages\": [{\"role\": \"user\", \"content\": \"café " + long + "\"}]\n}", 0, false},
		{"ASCII, CRLF between tokens", "{\"model\":\"fake/gpt-fake\",\r\n\"messages\":[{\"role\":\"user\",\"content\":\"" + long + "\"}]}", 0, false},
	}
	for _, tc := range cases {
		res := p.post(t, pathChat, tc.body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", tc.name, res.StatusCode, readAll(t, res.Body))
		}
		readAll(t, res.Body)
	}
	path := history.Path(p.historyDir, "alice")
	var raw []byte
	for deadline := time.Now().Add(5 * time.Second); bytes.Count(raw, []byte("\n")) < len(cases); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("history holds %d lines, want %d", bytes.Count(raw, []byte("\n")), len(cases))
		}
		raw, _ = os.ReadFile(path)
	}
	if !utf8.Valid(raw) {
		t.Fatal("history is not valid UTF-8")
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	for i, tc := range cases {
		var e history.Entry
		if err := json.Unmarshal([]byte(lines[i]), &e); err != nil {
			t.Fatalf("%s: line %d is not valid JSON: %v", tc.name, i+1, err)
		}
		if e.UTF8Replaced != tc.replaced {
			t.Errorf("%s: utf8_replaced %d, want %d", tc.name, e.UTF8Replaced, tc.replaced)
		}
		if tc.verbatim && !strings.Contains(lines[i], `"request":`+tc.body+`,`) {
			t.Errorf("%s: the request is not in the line byte for byte", tc.name)
		}
		want := strings.ToValidUTF8(tc.body, "\uFFFD")
		if !jsonEqual(e.Request, want) {
			t.Errorf("%s: request read back as %.120s", tc.name, e.Request)
		}
	}
}
