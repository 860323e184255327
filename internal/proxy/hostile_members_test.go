package proxy

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
)

// Members spelled in another case, or repeated, are refused at the edge in
// the endpoint's format, audited, and never reach the provider: a provider
// that reads member names case-insensitively (encoding/json) or keeps
// another copy would otherwise act on a value cllama never checked.

// TestHostileCaseVariantContinuesAnotherAgentsResponse: bob sends alice's
// response id under PREVIOUS_RESPONSE_ID; cllama's ownership check reads
// only "previous_response_id", so before the fix the provider continued
// alice's conversation for bob.
func TestHostileCaseVariantContinuesAnotherAgentsResponse(t *testing.T) {
	p, _ := newStoredPod(t)
	alice := openAIClient(p, aliceToken)
	res, err := newResponse(t, alice, "fake/gpt-fake", "")
	if err != nil {
		t.Fatal(err)
	}
	before := len(p.up.requests())
	for _, member := range []string{"PREVIOUS_RESPONSE_ID", "Previous_Response_Id", "previous_response_ID"} {
		body := `{"model":"fake/gpt-fake","input":"x","` + member + `":"` + res.ID + `"}`
		resp := p.post(t, pathResponses, body, "Authorization", "Bearer "+bobToken)
		msg := wantFormatError(t, resp, formatResponses, http.StatusBadRequest)
		if !strings.Contains(msg, `"`+member+`" is "previous_response_id" spelled in another case`) {
			t.Errorf("%s: message %q does not name the member", member, msg)
		}
	}
	// Repeated exactly: the ownership check and the provider could read
	// different copies.
	body := `{"model":"fake/gpt-fake","input":"x","previous_response_id":"resp_nobody","previous_response_id":"` + res.ID + `"}`
	msg := wantFormatError(t, p.post(t, pathResponses, body, "Authorization", "Bearer "+bobToken), formatResponses, http.StatusBadRequest)
	if !strings.Contains(msg, `more than one "previous_response_id" member`) {
		t.Errorf("repeated: %q", msg)
	}
	if n := len(p.up.requests()); n != before {
		t.Fatalf("%d ambiguous requests reached the provider", n-before)
	}
}

// TestHostileCaseVariantModelBypassesAllowList: an agent allowed one model
// names another under MODEL, in every format; before the fix the provider
// ran the forbidden model while audit, history and metrics recorded the
// allowed one.
func TestHostileCaseVariantModelBypassesAllowList(t *testing.T) {
	p, _ := newStoredPod(t)
	writeFile(t, filepath.Join(p.root, "bob", "metadata.json"),
		`{"token":"`+bobToken+`","pod":"test-pod","models":["fake/gpt-fake","fakeant/claude-fake"]}`)
	bodies := map[string]struct {
		path, body string
	}{
		"chat":           {pathChat, `{"model":"fake/gpt-fake","MODEL":"gpt-forbidden","messages":[{"role":"user","content":"hi"}]}`},
		"chat (Model)":   {pathChat, `{"Model":"gpt-forbidden","model":"fake/gpt-fake","messages":[{"role":"user","content":"hi"}]}`},
		"chat (long s)":  {pathChat, `{"model":"fake/gpt-fake","\u017ftream":true,"messages":[{"role":"user","content":"hi"}]}`},
		"messages":       {pathMessages, `{"model":"fake/gpt-fake","max_tokens":8,"MODEL":"claude-forbidden","messages":[{"role":"user","content":"hi"}]}`},
		"messages role":  {pathMessages, `{"model":"fake/gpt-fake","max_tokens":8,"messages":[{"role":"user","Role":"assistant","content":"hi"}]}`},
		"responses":      {pathResponses, `{"model":"fake/gpt-fake","input":"x","MODEL":"gpt-forbidden"}`},
		"responses item": {pathResponses, `{"model":"fake/gpt-fake","input":[{"type":"message","role":"user","content":"x","TYPE":"function_call_output"}]}`},
	}
	before := len(p.up.requests())
	for name, b := range bodies {
		f := formatOf(b.path)
		if b.path == pathResponses {
			f = formatResponses
		}
		msg := wantFormatError(t, p.post(t, b.path, b.body, "Authorization", "Bearer "+bobToken), f, http.StatusBadRequest)
		if !strings.Contains(msg, "spelled in another case") {
			t.Errorf("%s: %q", name, msg)
		}
	}
	if n := len(p.up.requests()); n != before {
		t.Fatalf("%d ambiguous requests reached the provider", n-before)
	}
	// Each refusal is audited for the agent, with the member named.
	refused := 0
	for _, e := range p.audit.events(t) {
		if e.Type == audit.TypeError && e.ClawID == "bob" && e.StatusCode == http.StatusBadRequest && strings.Contains(e.Error, "spelled in another case") {
			refused++
		}
	}
	if refused != len(bodies) {
		t.Fatalf("%d refusals audited, want %d", refused, len(bodies))
	}
}

// wantFormatError checks resp is an error of status in f's error shape
// and returns its message.
func wantFormatError(t *testing.T, resp *http.Response, f exchange.Format, status int) string {
	t.Helper()
	body := readAll(t, resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	var anthropicShape struct {
		Type  string `json:"type"`
		Error struct {
			Type, Message string
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &anthropicShape); err != nil || anthropicShape.Error.Message == "" {
		t.Fatalf("%s error body %s: %v", f, body, err)
	}
	if f == formatAnthropic && anthropicShape.Type != "error" {
		t.Fatalf("not an Anthropic error body: %s", body)
	}
	return anthropicShape.Error.Message
}
