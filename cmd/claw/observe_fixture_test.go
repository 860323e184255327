package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/feeds"
	"github.com/clawdapus/clawgo/internal/history"
	"github.com/clawdapus/clawgo/internal/mediate"
	"github.com/clawdapus/clawgo/internal/modelsim"
	"github.com/clawdapus/clawgo/internal/pod"
	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// The audit, inspect and history goldens read fixtures recorded from a real
// cllama: `go test ./cmd/claw -run TestRecordObserveFixtures -record`
// compiles testdata/observe/pod, runs cllama in-process (the proxy with the
// feed decorator, the mediator and the tool executor, as cmd/cllama wires
// them) against a scripted model and an httptest trading service, holds the
// conversation below, and stores cllama's audit stdout and the session
// history it wrote under testdata/observe/recorded.
var recordFixtures = flag.Bool("record", false, "re-record testdata/observe/recorded from a real in-process cllama")

const (
	observeDir  = "testdata/observe"
	recordedLog = observeDir + "/recorded/cllama.log"
	recordedHis = observeDir + "/recorded/history"
)

// updateGoldens reports whether -update was given (the flag is registered
// in update_flag_test.go).
func updateGoldens() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	return ok && g.Get() == true
}

// copyTree copies the files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		full := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		return os.WriteFile(full, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// compileObservePod copies the fixture pod to a temporary directory and
// compiles it there as claw does, with fixed token entropy; the pod file
// is dated an hour back, older than its compiled output, as for a pod
// compiled by an earlier claw that went by time.
func compileObservePod(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, filepath.Join(observeDir, "pod"), dir)
	file := filepath.Join(dir, "claw-pod.yml")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(file, past, past); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := pod.Load(ctx, pod.LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	res, err := compile.Build(ctx, p, compile.Options{Rand: strings.NewReader(strings.Repeat("k", 4096))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compile.Stage(dir, res); err != nil {
		t.Fatal(err)
	}
	return dir
}

// observePod is a compiled fixture pod holding the recorded session
// history, with the recorded audit log at <dir>/cllama.log.
func observePod(t *testing.T) string {
	t.Helper()
	dir := compileObservePod(t)
	copyTree(t, recordedHis, filepath.Join(dir, filepath.FromSlash(compile.HistoryDir)))
	data, err := os.ReadFile(recordedLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cllama.log"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// deskService is the trading service of the recording: the descriptor's
// tools and feeds, behind the bearer token the pod gives it.
func deskService(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	var mu sync.Mutex
	trades := 0
	mux.HandleFunc("GET /api/v1/market_context/{claw_id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"claw_id": r.PathValue("claw_id"), "balance": 50000, "positions": map[string]int{}, "prices": map[string]float64{"AAPL": 190.5}})
	})
	mux.HandleFunc("POST /api/v1/trades", func(w http.ResponseWriter, r *http.Request) {
		var order map[string]any
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&order)
		mu.Lock()
		trades++
		order["trade_id"], order["status"], order["price"] = "T"+string(rune('0'+trades)), "filled", 190.5
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(order)
	})
	mux.HandleFunc("GET /api/v1/market-summary", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "AAPL 190.50, MSFT 415.25")
	})
	mux.HandleFunc("GET /api/v1/portfolio", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"positions":{}}`)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer desk-token" {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// podTransport reaches the pod's service names (trading-api:4000,
// claw-model:8080) at the httptest servers standing in for them.
func podTransport(hosts map[string]string) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := hosts[addr]; ok {
			addr = a
		}
		return d.DialContext(ctx, network, addr)
	}}
}

func TestRecordObserveFixtures(t *testing.T) {
	if !*recordFixtures {
		t.Skip("run with -record to re-record the fixtures")
	}
	dir := compileObservePod(t)
	script, err := modelsim.LoadScript(filepath.Join(observeDir, "recorded", "model-script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := modelsim.NewServer(modelsim.Options{Script: script})
	if err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(sim)
	defer model.Close()
	desk := httptest.NewServer(deskService(t))
	defer desk.Close()
	tr := podTransport(map[string]string{
		"claw-model:8080":  strings.TrimPrefix(model.URL, "http://"),
		"trading-api:4000": strings.TrimPrefix(desk.URL, "http://"),
	})

	histDir := filepath.Join(dir, filepath.FromSlash(compile.HistoryDir))
	cfg, err := proxy.LoadConfig(nil, []string{
		"CLAW_CONTEXT_ROOT=" + filepath.Join(dir, filepath.FromSlash(compile.ContextDir)),
		"CLAW_AUTH_DIR=" + filepath.Join(dir, compile.AuthDir),
		"CLAW_SESSION_HISTORY_DIR=" + histDir,
		"CLAW_POD=desk",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	var mu sync.Mutex
	aud := audit.New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return stdout.Write(p)
	}))
	rec, hw, err := proxy.OpenRecorder(cfg, aud, nil)
	if err != nil {
		t.Fatal(err)
	}
	exec := toolexec.New(toolexec.Options{Transport: tr})
	defer exec.Close()
	med, err := mediate.New(mediate.Options{Runner: exec, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(cfg, proxy.Options{Recorder: rec, Transport: tr, Mediator: med,
		Decorator: feeds.New(feeds.Options{Recorder: rec, Client: &http.Client{Transport: tr}})})
	if err != nil {
		t.Fatal(err)
	}
	cllama := httptest.NewServer(srv)
	defer cllama.Close()

	token := func(agent string) string {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(compile.ContextDir), agent, "metadata.json"))
		if err != nil {
			t.Fatal(err)
		}
		var md struct{ Token string }
		_ = json.Unmarshal(data, &md)
		return md.Token
	}
	send := func(agent, path, body string) {
		req, _ := http.NewRequest(http.MethodPost, cllama.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token(agent))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Logf("%s %s: %d %s", agent, path, res.StatusCode, clip(string(b), 200))
	}
	oa := func(user string) string {
		return `{"model":"openai/desk-analyst","messages":[{"role":"user","content":` + quote(user) + `}]}`
	}
	an := func(user string, stream bool) string {
		s := "false"
		if stream {
			s = "true"
		}
		return `{"model":"anthropic/desk-executor","max_tokens":256,"stream":` + s + `,"messages":[{"role":"user","content":` + quote(user) + `}]}`
	}
	send("analyst", "/v1/chat/completions", oa("How is my portfolio?"))
	send("executor", "/v1/messages", an("Buy 5 AAPL.", true))
	send("analyst", "/v1/chat/completions", oa("Buy 10 NVDA."))
	send("executor", "/v1/messages", an("Order 500 MSFT.", false))
	send("executor", "/v1/messages", an("Check the context twice.", false))
	send("analyst", "/v1/chat/completions", oa("overload"))
	cllama.Close()
	if err := hw.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.MkdirAll(filepath.Dir(recordedLog), 0o755); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	logData := stdout.Bytes()
	mu.Unlock()
	if err := os.WriteFile(recordedLog, logData, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(recordedHis)
	for _, agent := range []string{"analyst", "executor"} {
		data, err := os.ReadFile(history.Path(histDir, agent))
		if err != nil {
			t.Fatal(err)
		}
		dst := history.Path(recordedHis, agent)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
