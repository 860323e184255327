package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// fakeProvider answers chat completions: a request whose tools include
// desk__trade and that holds no tool result yet calls desk__trade and a
// made-up tool; any other request is answered with text.
func fakeProvider(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		usage := `"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}`
		if strings.Contains(string(body), `"desk__trade"`) && !strings.Contains(string(body), `"role":"tool"`) {
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+
				`{"id":"t1","type":"function","function":{"name":"desk__trade","arguments":"{}"}},`+
				`{"id":"t2","type":"function","function":{"name":"desk__nope","arguments":"{}"}}]},"finish_reason":"tool_calls"}],%s}`, usage)
			return
		}
		fmt.Fprintf(w, `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],%s}`, usage)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Scripted traffic (a passthrough request, a mediated turn with a tool
// error, a native call, a refused request), then a scrape of /metrics
// parsed with Prometheus's own text parser.
func TestMetricsAfterTraffic(t *testing.T) {
	up := fakeProvider(t)
	p := startMCPPod(t, "CLLAMA_METRICS_ADDR=127.0.0.1:0", "OPENAI_BASE_URL="+up.URL+"/v1")
	var metricsURL string
	deadline := time.Now().Add(5 * time.Second)
	for metricsURL == "" && time.Now().Before(deadline) {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, "cllama: metrics on "); ok {
				metricsURL = strings.TrimSpace(rest)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if metricsURL == "" {
		t.Fatalf("no metrics listener announced:\n%s", p.stderr.String())
	}
	chat := func(token, body string) int {
		req, _ := http.NewRequest(http.MethodPost, p.base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	msg := `{"model":"openai/gpt-test","messages":[{"role":"user","content":"hi"}]}`
	if s := chat("plain:other", msg); s != 200 {
		t.Fatalf("passthrough: %d", s)
	}
	if s := chat("analyst:s3cret", msg); s != 200 {
		t.Fatalf("mediated: %d", s)
	}
	if s := chat("analyst:wrong-secret-xyz", msg); s != 403 {
		t.Fatalf("refused: %d", s)
	}
	cs := p.connect(t, "analyst:s3cret", "")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "desk.get_context", Arguments: map[string]any{"symbol": "X"}}); err != nil {
		t.Fatal(err)
	}

	res, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, secret := range []string{"s3cret", "wrong-secret-xyz", "projected-for-analyst", "sk-unused", p.svc.srv.URL} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("metrics show %q", secret)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, raw)
	}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f := families[name]
		if f == nil {
			t.Fatalf("no %s in:\n%s", name, raw)
		}
		total := 0.0
	next:
		for _, m := range f.Metric {
			have := map[string]string{}
			for _, l := range m.Label {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			total += sampleValue(m)
		}
		return total
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"cllama_requests_total", map[string]string{"agent": "plain", "format": "openai", "outcome": "ok", "status": "200", "pod": "desk"}, 1},
		{"cllama_requests_total", map[string]string{"agent": "analyst", "outcome": "ok"}, 1},
		{"cllama_requests_total", map[string]string{"agent": "unknown", "outcome": "refused", "status": "403"}, 1},
		{"cllama_tool_calls_total", map[string]string{"agent": "analyst", "tool": "desk.trade", "service": "desk", "outcome": "ok", "mode": "mediated"}, 1},
		{"cllama_tool_calls_total", map[string]string{"tool": "unknown", "outcome": "unknown_tool", "mode": "mediated"}, 1},
		{"cllama_tool_calls_total", map[string]string{"tool": "desk.get_context", "outcome": "ok", "mode": "native"}, 1},
		{"cllama_tokens_total", map[string]string{"agent": "plain", "model": "openai/gpt-test", "direction": "in"}, 11},
		{"cllama_tokens_total", map[string]string{"agent": "analyst", "direction": "in"}, 22}, // both rounds
		{"cllama_mediated_rounds", nil, 1},             // one turn observed
		{"cllama_request_duration_seconds", nil, 3},    // three answered requests
		{"cllama_upstream_first_byte_seconds", nil, 2}, // two reached the provider
		{"cllama_proxy_overhead_seconds", nil, 2},
		{"cllama_active_streams", nil, 0},
		{"cllama_continuity_entries", nil, 1}, // the mediated turn's hidden rounds
		{"cllama_tool_call_duration_seconds", map[string]string{"mode": "native"}, 1},
	}
	for _, c := range checks {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if rounds := families["cllama_mediated_rounds"].Metric[0].Histogram.GetSampleSum(); rounds != 2 {
		t.Errorf("the turn took %v model calls, want 2", rounds)
	}
}

// sampleValue is a counter's or gauge's value, or a histogram's count.
func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestCollectorTarget: the binary runs its collector at GOGC=200 unless
// GOGC says otherwise, as the Go runtime reports it on /metrics.
func TestCollectorTarget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildCllama(ctx, t, dir)
	for _, tc := range []struct{ env, want string }{{"GOGC=", "200"}, {"GOGC=50", "50"}} {
		p := startCllama(ctx, t, bin, tc.env, "CLLAMA_METRICS_ADDR=127.0.0.1:0", "CLAW_CONTEXT_ROOT="+dir)
		var metricsURL string
		for deadline := time.Now().Add(5 * time.Second); metricsURL == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, line := range strings.Split(p.stderrNow(), "\n") {
				if rest, ok := strings.CutPrefix(line, "cllama: metrics on "); ok {
					metricsURL = strings.TrimSpace(rest)
				}
			}
		}
		if metricsURL == "" {
			t.Fatalf("%s: no metrics listener announced", tc.env)
		}
		res, err := http.Get(metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(raw), "\ngo_gc_gogc_percent "+tc.want+"\n") {
			t.Errorf("%s: want go_gc_gogc_percent %s in:\n%s", tc.env, tc.want, grepLines(string(raw), "go_gc_gogc"))
		}
		_ = p.cmd.Process.Kill()
	}
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
