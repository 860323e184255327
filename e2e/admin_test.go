package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// adminURL is the admin listener claw up printed it published.
func (p *pod) adminURL() string {
	p.t.Helper()
	m := regexp.MustCompile(`operator console and API at (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(p.up)
	if m == nil {
		p.t.Fatalf("claw up did not say where the admin listener is:\n%s", p.up)
	}
	return m[1]
}

// operatorToken is the pod's operator token.
func (p *pod) operatorToken() string {
	p.t.Helper()
	data, err := os.ReadFile(filepath.Join(p.dir, ".claw-auth", "operator-token"))
	if err != nil {
		p.t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// checkAdmin: the operator reaches cllama's admin listener on loopback
// with the token claw up made, and nothing without it.
func checkAdmin(t *testing.T, p *pod) {
	base := p.adminURL()
	get := func(token string) (*http.Response, map[string]string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/pod", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]string
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	if resp, _ := get(""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	resp, body := get(p.operatorToken())
	if resp.StatusCode != http.StatusOK || body["pod"] != p.project {
		t.Errorf("operator token: %d %v, want 200 naming pod %s", resp.StatusCode, body, p.project)
	}
}
