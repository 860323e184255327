package main

import (
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
	const counter = `data-live-agent="analyst" data-live-field="requests">`
	analystTurn(t, p.base)
	analystTurn(t, p.base)
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
	analystTurn(t, p.base)
	if home = consoleGet(t, c, admin+"/"); !strings.Contains(home, counter+"3<") {
		t.Fatalf("a turn after the restart:\n%s", home)
	}
}
