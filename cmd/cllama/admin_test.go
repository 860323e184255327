package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

const testOperatorToken = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

// adminURL waits for the admin listener's start-up line.
func adminURL(t *testing.T, p *mcpPod) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, "cllama: admin listener on "); ok {
				addr, _, _ := strings.Cut(rest, " ")
				return "http://" + addr
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no admin listener announced:\n%s", p.stderr.String())
	return ""
}

func status(t *testing.T, method, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(`{"model":"openai/m","messages":[{"role":"user","content":"hi"}]}`))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The two listeners do not trade tokens: an agent's token is refused on
// the admin listener, the operator's on the agents' listener.
func TestAdminListenerAndAgentListenerKeepTheirTokens(t *testing.T) {
	p := startMCPPod(t, "CLLAMA_ADMIN_ADDR=127.0.0.1:0", "CLLAMA_ADMIN_TOKEN="+testOperatorToken)
	admin := adminURL(t, p)
	for _, c := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"an agent's token", "analyst:s3cret", http.StatusUnauthorized},
		{"the operator token", testOperatorToken, http.StatusOK},
	} {
		if got := status(t, http.MethodGet, admin+"/api/pod", c.token); got != c.want {
			t.Errorf("%s on the admin listener: %d, want %d", c.name, got, c.want)
		}
	}
	if got := status(t, http.MethodPost, p.base+"/v1/chat/completions", testOperatorToken); got != http.StatusUnauthorized {
		t.Fatalf("the operator token on the agents' listener: %d, want 401", got)
	}
	if got := status(t, http.MethodPost, p.base+"/v1/chat/completions", "cllama-operator:"+testOperatorToken); got != http.StatusUnauthorized && got != http.StatusForbidden {
		t.Fatalf("the operator token dressed as an agent's: %d, want it refused", got)
	}
}

func TestAdminAddrWithoutTokenIsAConfigError(t *testing.T) {
	var stderr lockedBuffer
	code := run([]string{"-admin-addr", "127.0.0.1:0"}, []string{"CLAW_CONTEXT_ROOT=/nonexistent"}, &lockedBuffer{}, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "CLLAMA_ADMIN_TOKEN_FILE") {
		t.Fatalf("exit %d, stderr %q; want a configuration error naming CLLAMA_ADMIN_TOKEN_FILE", code, stderr.String())
	}
}
