package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/auditlog"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/owners"
)

// crashAgents are the agents TestKill9RepairsFiles drives.
var crashAgents = []string{"alice", "bob"}

// TestKill9RepairsFiles kills the real binary with SIGKILL again and
// again while agents' exchanges (large bodies) are recorded to session
// history, then starts it once more. Every exchange a runner saw
// complete is in history, every line of every history file is valid
// JSON, and each partial last line the restart cut (a kill's, and the
// ones planted in history, the stored-responses log and the continuity
// log) is named in a file_repaired audit event with its file, offset and
// bytes. An agent's history may be spread over three files
// (CLLAMA_HISTORY_FILES): each is repaired alike, and no entry is in two.
func TestKill9RepairsFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills it again and again")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildCllama(ctx, t, dir)
	up := chunkedModel(t)
	for _, a := range crashAgents {
		write(t, filepath.Join(dir, "context", a, "metadata.json"), `{"token":"`+a+`:s3cret"}`)
	}
	histDir := filepath.Join(dir, "history")
	env := []string{"CLAW_CONTEXT_ROOT=" + filepath.Join(dir, "context"), "CLAW_AUTH_DIR=" + dir, "CLAW_POD=desk",
		"CLAW_SESSION_HISTORY_DIR=" + histDir, "CLLAMA_HISTORY_FILES=3", "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + up.URL + "/v1"}

	const kills = 8
	acked := map[string]string{} // request id → agent
	var repairs []audit.Event
	for run := range kills {
		out := filepath.Join(dir, fmt.Sprintf("audit-%d.log", run))
		p := startWithAudit(ctx, t, bin, out, env)
		for id, agent := range loadAndKill(t, p, 3+run*5%11) {
			acked[id] = agent
		}
		repairs = append(repairs, fileRepairs(t, out)...)
	}
	for _, e := range repairs {
		paths, _ := history.Paths(histDir, e.ClawID)
		if e.Bytes == nil || *e.Bytes <= 0 || e.Offset == nil || !slices.Contains(paths, e.File) {
			t.Errorf("a restart reported %+v", e)
		}
	}

	// Plant partial last lines, as a crash would leave them, in every
	// append-only file, and note where the restart must cut each.
	stateDir := filepath.Join(histDir, ".continuity")
	want := map[string][2]int64{} // file → offset, bytes
	plant := func(path, partial string, recordEnd int64) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(partial); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		end := recordEnd
		if end < 0 {
			end = int64(bytes.LastIndexByte(b, '\n') + 1)
		}
		want[path] = [2]int64{end, int64(len(b)) - end}
	}
	plant(history.Path(histDir, "alice"), `{"id":"planted","agent_id":"alice","request":{"messages":[{"ro`, -1)
	plant(history.Path(histDir, "bob"), "", -1) // whatever the last kill left
	plant(filepath.Join(stateDir, owners.FileName), `{"id":"resp_planted","agent":"al`, -1)
	logEnd := fileSize(t, filepath.Join(stateDir, "continuity.log")) // whole records only: no mediated turns
	plant(filepath.Join(stateDir, "continuity.log"), "\x2a\x00\x00", logEnd)

	// The restart: one exchange per agent opens its history file.
	out := filepath.Join(dir, "audit-last.log")
	p := startWithAudit(ctx, t, bin, out, env)
	for _, a := range crashAgents {
		id, err := exchange(p.addr, a, 4<<10)
		if err != nil {
			t.Fatal(err)
		}
		acked[id] = a
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if rest, err := p.wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, rest)
	}
	got := map[string][2]int64{}
	for _, e := range fileRepairs(t, out) {
		if _, dup := got[e.File]; dup || e.Offset == nil || e.Bytes == nil {
			t.Errorf("restart reported %+v", e)
			continue
		}
		got[e.File] = [2]int64{*e.Offset, int64(*e.Bytes)}
	}
	for path, w := range want {
		if w[1] == 0 {
			if g, ok := got[path]; ok {
				t.Errorf("%s ended whole, yet the restart reported a cut of %d bytes at %d", path, g[1], g[0])
			}
			continue
		}
		if got[path] != w {
			t.Errorf("%s: restart reported offset and bytes %v, want %v", path, got[path], w)
		}
	}
	found, files := 0, 0
	for _, a := range crashAgents {
		paths, err := history.Paths(histDir, a)
		if err != nil || len(paths) == 0 || len(paths) > 3 {
			t.Fatalf("%s's history files: %v (%v), want one to three", a, paths, err)
		}
		seen := map[string]bool{}
		for _, p := range paths {
			found += checkHistory(t, p, acked, seen)
		}
		files += len(paths)
	}
	if found != len(acked) {
		t.Fatalf("%d of %d exchanges the runners saw complete are in history", found, len(acked))
	}
	t.Logf("%d kills, %d exchanges acknowledged, all in history (%d files for %d agents); %d partial lines cut by the restarts after kills",
		kills, len(acked), files, len(crashAgents), len(repairs))
}

// chunkedModel is an OpenAI-format upstream answering every request with
// a large completion, chunked: with no Content-Length the runner's read
// of cllama's answer ends only once cllama's handler has returned, after
// the exchange's history entry is written, so a completed read means an
// acknowledged entry.
func chunkedModel(t *testing.T) *httptest.Server {
	text := strings.Repeat("lorem ipsum ", 10<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":9,"total_tokens":18}}`, text)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// exchange sends agent's request with a body of about size bytes and
// reads the answer whole; it returns the request id.
func exchange(addr, agent string, size int) (string, error) {
	body := `{"model":"openai/gpt-test","messages":[{"role":"user","content":"` + strings.Repeat("x", size) + `"}]}`
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+agent+":s3cret")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Request-Id") == "" {
		return "", fmt.Errorf("%s: status %d, request id %q", agent, res.StatusCode, res.Header.Get("X-Request-Id"))
	}
	return res.Header.Get("X-Request-Id"), nil
}

// loadAndKill runs six runners against p, with bodies of 64 KiB to 1 MiB,
// kills p with SIGKILL once they have seen killAt exchanges complete, and
// returns every exchange they saw complete (request id → agent).
func loadAndKill(t *testing.T, p *cllamaProc, killAt int) map[string]string {
	t.Helper()
	var mu sync.Mutex
	acked := map[string]string{}
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for r := range 6 {
		agent := crashAgents[r%len(crashAgents)]
		wg.Go(func() {
			for k := 0; ; k++ {
				id, err := exchange(p.addr, agent, 64<<10+(r*7+k*13)%16*(60<<10))
				if err != nil {
					return // killed
				}
				mu.Lock()
				acked[id] = agent
				if len(acked) >= killAt {
					once.Do(func() { close(done) })
				}
				mu.Unlock()
			}
		})
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Error("no exchange completed within a minute")
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	<-p.done
	_ = p.cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return acked
}

// startWithAudit starts bin as startCllama does, its audit log (stdout)
// going to the file out.
func startWithAudit(ctx context.Context, t *testing.T, bin, out string, env []string) *cllamaProc {
	t.Helper()
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return startCllamaTo(ctx, t, bin, f, env...)
}

// fileRepairs reads the file_repaired events of an audit log.
func fileRepairs(t *testing.T, path string) []audit.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, _, err := auditlog.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Event
	for _, e := range events {
		if e.Type == audit.TypeFileRepaired {
			out = append(out, e)
		}
	}
	return out
}

// checkHistory checks that every line of a history file is whole and
// valid JSON, and no entry is there twice or in another of the agent's
// files (seen, which it adds to); it returns how many of the acknowledged
// entries it holds.
func checkHistory(t *testing.T, path string, acked map[string]string, seen map[string]bool) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Errorf("%s does not end with a whole line", path)
	}
	found := 0
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var e struct {
			ID      string `json:"id"`
			AgentID string `json:"agent_id"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Errorf("%s: line %d is not valid JSON (%v): %.60q", path, i+1, err, line)
			continue
		}
		if seen[e.ID] {
			t.Errorf("%s: entry %s twice", path, e.ID)
		}
		seen[e.ID] = true
		if agent, ok := acked[e.ID]; ok && agent == e.AgentID {
			found++
		}
	}
	return found
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
