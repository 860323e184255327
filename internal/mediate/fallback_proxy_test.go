package mediate

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// TestHiddenRoundFallsBack: behind the real edge, a mediated turn whose
// second round finds its provider failing (500) is answered by the
// fallback target, which gets the hidden round and its own model; the
// next turn restores that hidden round for the first provider again.
func TestHiddenRoundFallsBack(t *testing.T) {
	k := openaiKit{}
	primary, backup := newUpstream(t, k), newUpstream(t, k)
	svc := newServices(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "context")
	writeFile(t, filepath.Join(root, "alice", "metadata.json"), mustJSON(map[string]any{"token": "alice:s3cret", "pod": "desk"}))
	writeFile(t, filepath.Join(root, "alice", "tools.json"), mustJSON(toolsManifest(svc.srv.URL, manifest.Policy{})))
	writeFile(t, filepath.Join(root, "alice", "service-auth", "svc.json"), mustJSON(map[string]any{"service": "svc", "auth_type": "bearer", "token": "projected"}))
	writeFile(t, filepath.Join(dir, "auth", "providers.json"), mustJSON(map[string]any{"version": 2, "providers": map[string]any{
		"primary": map[string]any{"base_url": primary.srv.URL + "/v1", "keys": []any{map[string]any{"id": "p", "secret": "sk-p"}}},
		"backup":  map[string]any{"base_url": backup.srv.URL + "/v1", "keys": []any{map[string]any{"id": "b", "secret": "sk-b"}}}},
		"fallbacks": map[string]any{"primary/up-model": []any{"backup/backup-model"}}}))
	ex := toolexec.New(toolexec.Options{})
	t.Cleanup(func() { _ = ex.Close() })
	auditBuf := &syncBuffer{}
	logger := audit.New(auditBuf)
	rec := recorder.New(logger, nil)
	med, err := New(Options{Runner: ex, Recorder: rec, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(proxy.Config{ContextRoot: root, AuthDir: filepath.Join(dir, "auth"), Pod: "desk"},
		proxy.Options{Recorder: rec, Mediator: med, AgentCheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	front := httptest.NewServer(srv)
	t.Cleanup(front.Close)
	post := func(body string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer alice:s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, out)
		}
		return string(out)
	}

	primary.script = []step{{Calls: []tcall{call("c1", echo, `{"q":"x"}`)}, Usage: u(4, 1)}, {Status: 500, Raw: `{"error":{"message":"boom","type":"server_error"}}`}}
	backup.script = []step{{Text: "answered by backup", Usage: u(6, 2)}}
	out := post(`{"model":"primary/up-model","messages":[{"role":"user","content":"hi"}]}`)
	if !strings.Contains(out, "answered by backup") {
		t.Fatalf("answer %s", out)
	}
	br := backup.requests()
	if len(br) != 1 || !strings.Contains(string(br[0].Raw), `"model":"backup-model"`) || !hasCall(br[0].Msgs, "c1") {
		t.Fatalf("the fallback got %d requests: %s", len(br), br[0].Raw)
	}
	if svc.count("echo") != 1 {
		t.Fatalf("the tool ran %d times, want once", svc.count("echo"))
	}
	found, answered := false, false
	for _, e := range auditBuf.events() {
		found = found || e.Type == audit.TypeFallback && e.FallbackFrom == "primary/up-model" && e.Model == "backup/backup-model" && e.FallbackReason == "server_error"
		answered = answered || e.Type == audit.TypeResponse && e.FallbackFrom == "primary/up-model" && e.Model == "backup/backup-model"
	}
	if !found || !answered {
		t.Fatalf("no fallback audit event: %v", auditBuf.events())
	}

	// The next turn: the primary answers again and gets the hidden round.
	primary.script = append(primary.script, step{Text: "second", Usage: u(8, 1)})
	out = post(`{"model":"primary/up-model","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"answered by backup"},{"role":"user","content":"again"}]}`)
	if !strings.Contains(out, "second") {
		t.Fatalf("second answer %s", out)
	}
	pr := primary.requests()
	if len(pr) != 3 || !hasCall(pr[2].Msgs, "c1") {
		t.Fatalf("the next turn's request did not restore the hidden round: %s", pr[len(pr)-1].Raw)
	}
}

func hasCall(msgs []tmsg, id string) bool {
	for _, m := range msgs {
		for _, c := range m.Calls {
			if c.ID == id {
				return true
			}
		}
	}
	return false
}
