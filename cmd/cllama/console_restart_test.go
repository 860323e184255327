package main

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// A restart does not zero the console's 5-minute counters: cllama starts
// them from the last five minutes of history, and counts on from there
// without counting an exchange twice.
func TestConsoleCountersSurviveARestart(t *testing.T) {
	up := fakeProvider(t)
	p := startMCPPod(t, "CLLAMA_ADMIN_ADDR=127.0.0.1:0", "CLLAMA_ADMIN_TOKEN="+testOperatorToken, "OPENAI_BASE_URL="+up.URL+"/v1")
	turn := func() {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.base+"/v1/chat/completions",
			strings.NewReader(`{"model":"openai/gpt-test","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer analyst:s3cret")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("mediated turn: %v %v", res, err)
		}
		res.Body.Close()
	}
	const counter = `data-live-agent="analyst" data-live-field="requests">`
	turn()
	turn()
	c := consoleClient(t, adminURL(t, p), testOperatorToken)
	if home := consoleGet(t, c, adminURL(t, p)+"/"); !strings.Contains(home, counter+"2<") {
		t.Fatalf("before the restart:\n%s", home)
	}
	p.stop()
	p.stderr = &lockedBuffer{}
	p.serve(t)
	admin := adminURL(t, p)
	c = consoleClient(t, admin, testOperatorToken)
	var home string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if home = consoleGet(t, c, admin+"/"); strings.Contains(home, counter+"2<") {
			break
		}
	}
	if !strings.Contains(home, counter+"2<") {
		t.Fatalf("after the restart, the counter was not started from history:\n%s", home)
	}
	turn()
	if home = consoleGet(t, c, admin+"/"); !strings.Contains(home, counter+"3<") {
		t.Fatalf("a turn after the restart:\n%s", home)
	}
}
