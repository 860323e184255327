package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// BenchmarkFloorProcess sets cllama beside the floor as separate
// processes, as an operator would compare them: the real cllama binary
// (history on, audit log to a pipe) and a bare reverse proxy
// (testdata/floorproxy), in front of the same provider. Each proxy's CPU
// is read from its own /proc/<pid>/stat, so neither the clients nor the
// provider are counted; latency is the runner's, less the direct path's.
// Each path runs in turn, five times over, and the table gives medians;
// throughput is requests per second of wall time while c clients keep
// the path busy.
//
// With CLLAMA_BENCH_BEFORE naming another cllama binary (an earlier
// build), it runs beside the others in the same rounds and gets a row of
// its own, "(before)", with its figures in cllama's columns: a change's
// effect measured in one run, on the same machine noise. With
// CLLAMA_BENCH_ENV (KEY=VALUE settings separated by spaces), cllama's row
// runs with those settings and "(before)" without: a setting's effect,
// with CLLAMA_BENCH_BEFORE naming the same build.
//
//	go test -run '^$' -bench FloorProcess -benchtime 1x ./cmd/cllama/
func BenchmarkFloorProcess(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := b.TempDir()
	bin := buildCllama(ctx, b, dir)
	floorBin := filepath.Join(dir, "floorproxy")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", floorBin, "./testdata/floorproxy").CombinedOutput(); err != nil {
		b.Fatalf("build the floor: %v\n%s", err, out)
	}
	// One server is the provider and the tool service (/ping).
	svc := httptest.NewServer(http.HandlerFunc(floorService))
	b.Cleanup(svc.Close)
	root := filepath.Join(dir, "context")
	write(b, filepath.Join(root, "a", "metadata.json"), `{"token":"a:s"}`)
	write(b, filepath.Join(root, "t", "metadata.json"), `{"token":"t:s"}`)
	write(b, filepath.Join(root, "t", "tools.json"), `{"version":1,"tools":[{"name":"desk.ping","description":"ping","inputSchema":{"type":"object","properties":{}},
	 "execution":{"transport":"http","service":"desk","base_url":"`+svc.URL+`","method":"POST","path":"/ping"}}]}`)
	write(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"`+svc.URL+`/v1","api_key":"k"}}}`)
	cl := startCllama(ctx, b, bin, append([]string{"CLAW_CONTEXT_ROOT=" + root, "CLAW_AUTH_DIR=" + filepath.Join(dir, "auth"),
		"CLAW_SESSION_HISTORY_DIR=" + filepath.Join(dir, "history"), "CLLAMA_STATE_DIR=" + filepath.Join(dir, "state")},
		strings.Fields(os.Getenv("CLLAMA_BENCH_ENV"))...)...)
	// The same cllama with its cleartext upstreams on net/http
	// (CLLAMA_UPSTREAM_CLIENT=net/http): how much of the difference is
	// internal/h1's.
	nh := startCllama(ctx, b, bin, "CLAW_CONTEXT_ROOT="+root, "CLAW_AUTH_DIR="+filepath.Join(dir, "auth"),
		"CLAW_SESSION_HISTORY_DIR="+filepath.Join(dir, "history-nh"), "CLLAMA_STATE_DIR="+filepath.Join(dir, "state-nh"),
		"CLLAMA_UPSTREAM_CLIENT=net/http")
	floor, floorPid := startFloor(ctx, b, floorBin, svc.URL)
	var before *cllamaProc
	if bb := os.Getenv("CLLAMA_BENCH_BEFORE"); bb != "" {
		before = startCllama(ctx, b, bb, "CLAW_CONTEXT_ROOT="+root, "CLAW_AUTH_DIR="+filepath.Join(dir, "auth"),
			"CLAW_SESSION_HISTORY_DIR="+filepath.Join(dir, "history-before"), "CLLAMA_STATE_DIR="+filepath.Join(dir, "state-before"))
	}

	pad := strings.Repeat("lorem ipsum dolor ", 200<<10/18)
	chat := func(model, content string, stream bool) []byte {
		return []byte(fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, model, stream, content))
	}
	small := strings.Repeat("x", 900)
	type path struct {
		name string
		pid  int
		turn func(c *http.Client, n int) time.Duration
	}
	one := func(token, model, content string, stream bool) func(base string) func(*http.Client, int) time.Duration {
		body := chat(model, content, stream)
		return func(base string) func(*http.Client, int) time.Duration {
			return func(c *http.Client, _ int) time.Duration {
				return floorDo(b, c, base+"/v1/chat/completions", token, body)
			}
		}
	}
	mediated := func(base string) func(*http.Client, int) time.Duration {
		return func(c *http.Client, n int) time.Duration {
			return floorDo(b, c, base+"/v1/chat/completions", "t:s", chat("fake/m", fmt.Sprintf("turn %d", n), false))
		}
	}
	// paths are the direct path and the floor (bare, sent by the runner
	// as is) and each cllama (proxied).
	paths := func(bare, proxied func(base string) func(*http.Client, int) time.Duration) []path {
		ps := []path{{"direct", 0, bare(svc.URL)}, {"floor", floorPid, bare(floor)},
			{"cllama", cl.cmd.Process.Pid, proxied("http://" + cl.addr)},
			{"net/http", nh.cmd.Process.Pid, proxied("http://" + nh.addr)}}
		if before != nil {
			ps = append(ps, path{"before", before.cmd.Process.Pid, proxied("http://" + before.addr)})
		}
		return ps
	}
	cases := []struct {
		name  string
		c, n  int
		paths []path
	}{
		{"1 KB json c=1", 1, 2000, paths(one("", "m", small, false), one("a:s", "fake/m", small, false))},
		{"1 KB json c=32", 32, 4000, paths(one("", "m", small, false), one("a:s", "fake/m", small, false))},
		{"200 KB json c=8", 8, 1000, paths(one("", "m", pad, false), one("a:s", "fake/m", pad, false))},
		// One agent's 64 conversations at once: every entry goes to one
		// history file.
		{"200 KB json c=64", 64, 2048, paths(one("", "m", pad, false), one("a:s", "fake/m", pad, false))},
		{"stream c=16", 16, 3000, paths(one("", "m", small, true), one("a:s", "fake/m", small, true))},
		// A mediated turn: two model rounds and one tool call. The
		// runner makes the three calls itself (direct, and through the
		// floor) or sends one request through cllama.
		{"mediated turn c=1", 1, 1000, paths(func(base string) func(*http.Client, int) time.Duration { return floorTurn(b, base) }, mediated)},
	}
	type figures struct{ cpu, p50, rps []float64 }
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\ncllama and the floor as processes of their own (medians of 5 rounds):")
	fmt.Fprintln(tw, "FIGURE\tFLOOR CPU/REQ\tCLLAMA CPU/REQ\tCPU ÷ FLOOR\tFLOOR ADDED p50\tCLLAMA ADDED p50\tp50 ÷ FLOOR\tFLOOR REQ/S\tCLLAMA REQ/S\tREQ/S ÷ FLOOR\tNET/HTTP CPU/REQ\th1 CPU ÷ NET/HTTP")
	defer tw.Flush()
	// A case alone: -bench 'FloorProcess/200_KB'.
	for _, tc := range cases {
		b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
			for b.Loop() {
				got := map[string]*figures{}
				turn := 0
				for range 5 {
					for _, p := range tc.paths {
						clients := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
						lat := make([]time.Duration, 0, tc.n)
						var mu sync.Mutex
						for range 20 {
							turn++
							p.turn(clients, turn)
						}
						cpu0, wall0 := procCPU(b, p.pid), time.Now()
						var wg sync.WaitGroup
						per := tc.n / tc.c
						for range tc.c {
							wg.Add(1)
							go func() {
								defer wg.Done()
								mine := make([]time.Duration, 0, per)
								for range per {
									mu.Lock()
									turn++
									n := turn
									mu.Unlock()
									mine = append(mine, p.turn(clients, n))
								}
								mu.Lock()
								lat = append(lat, mine...)
								mu.Unlock()
							}()
						}
						wg.Wait()
						wall := time.Since(wall0)
						cpu := float64(procCPU(b, p.pid)-cpu0) / float64(time.Microsecond) / float64(len(lat))
						clients.CloseIdleConnections()
						f := got[p.name]
						if f == nil {
							f = &figures{}
							got[p.name] = f
						}
						f.cpu = append(f.cpu, cpu)
						f.p50 = append(f.p50, float64(floorPercentile(lat, 0.5))/float64(time.Microsecond))
						f.rps = append(f.rps, float64(len(lat))/wall.Seconds())
					}
				}
				direct := median(got["direct"].p50)
				fc, fp, fr := median(got["floor"].cpu), median(got["floor"].p50)-direct, median(got["floor"].rps)
				nc := median(got["net/http"].cpu)
				row := func(name, which string) (cpu, p50, rps float64) {
					cc, cp, cr := median(got[which].cpu), median(got[which].p50)-direct, median(got[which].rps)
					fmt.Fprintf(tw, "%s\t%.0f µs\t%.0f µs\t%.2f×\t%.0f µs\t%.0f µs\t%.2f×\t%.0f\t%.0f\t%.2f×\t%.0f µs\t%.2f×\n",
						name, fc, cc, cc/fc, fp, cp, cp/fp, fr, cr, cr/fr, nc, cc/nc)
					return cc, cp, cr
				}
				cc, cp, cr := row(tc.name, "cllama")
				if before != nil {
					row(tc.name+" (before)", "before")
				}
				b.ReportMetric(cc/fc, "cpu-x-floor")
				b.ReportMetric(cc/nc, "cpu-x-nethttp")
				b.ReportMetric(cp/fp, "p50-x-floor")
				b.ReportMetric(cr/fr, "rps-x-floor")
			}
		})
	}
}

// floorService is the provider (a text answer, a stream, or for a request
// offering desk__ping without its result, a call of it) and the tool
// service (/ping) of the binary's benchmarks.
func floorService(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/ping" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"pong":true}`)
		return
	}
	if bytes.Contains(body, []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range []string{"Hel", "lo", " there"} {
			_, _ = fmt.Fprintf(w, "data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", piece)
		}
		_, _ = io.WriteString(w, "data: {\"id\":\"s\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if bytes.Contains(body, []byte(`"desk__ping"`)) && !bytes.Contains(body, []byte(`"tool_call_id"`)) {
		_, _ = io.WriteString(w, floorToolCall)
		return
	}
	_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
}

const floorToolCall = `{"id":"t","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"desk__ping","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`

// floorTurn is a mediated turn's three calls made by the runner itself,
// as cllama makes them: the model offered the tool, the tool, the model
// given the result.
func floorTurn(b *testing.B, base string) func(*http.Client, int) time.Duration {
	tools := `,"tools":[{"type":"function","function":{"name":"desk__ping","description":"ping","parameters":{"type":"object","properties":{}}}}]}`
	return func(c *http.Client, n int) time.Duration {
		user := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"turn %d"}]`, n)
		first := []byte(user + tools)
		second := []byte(strings.TrimSuffix(user, "]") + `,{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"desk__ping","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"{\"pong\":true}"}]` + tools)
		return floorDo(b, c, base+"/v1/chat/completions", "", first) + floorDo(b, c, base+"/ping", "", []byte(`{}`)) +
			floorDo(b, c, base+"/v1/chat/completions", "", second)
	}
}

func floorDo(b *testing.B, c *http.Client, url, token string, body []byte) time.Duration {
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Fatalf("%s: status %d", url, res.StatusCode)
	}
	return time.Since(start)
}

// startFloor starts the floor proxy in front of upstream.
func startFloor(ctx context.Context, b *testing.B, bin, upstream string) (string, int) {
	cmd := exec.CommandContext(ctx, bin, "-upstream", upstream)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if _, addr, ok := strings.Cut(lines.Text(), "listening on "); ok {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return "http://" + addr, cmd.Process.Pid
		}
	}
	b.Fatal("the floor printed no listening line")
	return "", 0
}

// procCPU is the user and system time process pid has used (0 for pid 0,
// the direct path, which has no proxy).
func procCPU(b *testing.B, pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces), from
	// field 3: utime and stime are fields 14 and 15, in clock ticks
	// (USER_HZ, 100 on Linux).
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func floorPercentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
