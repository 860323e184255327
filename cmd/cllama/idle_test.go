package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkIdleRSS starts the real binary as a pod runs it (an agent with
// a managed tool and one without, a provider, history, the continuity
// store and metrics on) and prints its resident memory at rest two seconds
// after start, split into anonymous memory and pages of files (its own
// executable), then again two seconds after a mix of traffic (plain and
// streamed requests, mediated turns with a tool call, metrics scrapes and
// health checks) and once it has been idle for twelve.
//
//	go test -run '^$' -bench IdleRSS -benchtime 1x ./cmd/cllama/
func BenchmarkIdleRSS(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := b.TempDir()
	// The binary as the pod image ships it (static, stripped).
	bin := buildAsImage(ctx, b, filepath.Join(dir, "cllama"), ".")
	// One server is the provider and the tool service (/ping).
	svc := httptest.NewServer(http.HandlerFunc(floorService))
	b.Cleanup(svc.Close)
	root := filepath.Join(dir, "context")
	write(b, filepath.Join(root, "plain", "metadata.json"), `{"token":"plain:s"}`)
	write(b, filepath.Join(root, "tooled", "metadata.json"), `{"token":"tooled:s"}`)
	write(b, filepath.Join(root, "tooled", "tools.json"), `{"version":1,"tools":[{"name":"desk.ping","description":"ping","inputSchema":{"type":"object","properties":{}},
	 "execution":{"transport":"http","service":"desk","base_url":"`+svc.URL+`","method":"POST","path":"/ping"}}]}`)
	write(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"`+svc.URL+`/v1","api_key":"k"}}}`)
	metricsAddr := freeAddr(b)
	for b.Loop() {
		p := startCllama(ctx, b, bin, "CLAW_CONTEXT_ROOT="+root, "CLAW_AUTH_DIR="+filepath.Join(dir, "auth"),
			"CLAW_SESSION_HISTORY_DIR="+b.TempDir(), "CLLAMA_METRICS_ADDR="+metricsAddr)
		pid := p.cmd.Process.Pid
		time.Sleep(2 * time.Second)
		b.ReportMetric(mib(procStatus(b, pid, "VmRSS")), "rest-MiB")
		b.ReportMetric(mib(procStatus(b, pid, "RssAnon")), "rest-anon-MiB")
		b.ReportMetric(mib(procStatus(b, pid, "RssFile")), "rest-file-MiB")
		for i := range 50 {
			post(b, p.addr, "plain:s", `{"model":"fake/m","messages":[{"role":"user","content":"hi"}]}`)
			post(b, p.addr, "plain:s", `{"model":"fake/m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			post(b, p.addr, "tooled:s", fmt.Sprintf(`{"model":"fake/m","messages":[{"role":"user","content":"turn %d"}]}`, i))
			get(b, "http://"+p.addr+"/health")
			get(b, "http://"+metricsAddr+"/metrics")
		}
		time.Sleep(2 * time.Second)
		b.ReportMetric(mib(procStatus(b, pid, "VmRSS")), "after-load-MiB")
		b.ReportMetric(mib(procStatus(b, pid, "RssAnon")), "after-load-anon-MiB")
		// Idle for longer than cllama waits before it gives the heap
		// back.
		time.Sleep(10 * time.Second)
		b.ReportMetric(mib(procStatus(b, pid, "VmRSS")), "idle-after-load-MiB")
		b.ReportMetric(mib(procStatus(b, pid, "RssAnon")), "idle-after-load-anon-MiB")
		_ = p.cmd.Process.Kill()
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// freeAddr is a loopback address nothing listens on.
func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func post(b *testing.B, addr, token, body string) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	drain(b, req)
}

func get(b *testing.B, url string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	drain(b, req)
}

func drain(b *testing.B, req *http.Request) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Fatalf("%s %s: status %d", req.Method, req.URL.Path, res.StatusCode)
	}
}
