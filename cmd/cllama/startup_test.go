package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// BenchmarkStartup starts the real binary again and again, as a pod
// starts it (an agent with a managed tool and one without, a provider,
// history and the continuity store; metrics, and metrics with OTLP
// traces, as cases of their own), and the floor (testdata/floorproxy) as
// the reference, each run in turn. For each it prints the medians of:
//
//   - start-ms: from exec to the first answer to GET /health on a fresh
//     connection (not to the port taking the connection: the kernel does
//     that as soon as the socket listens, before anything is wired);
//   - start-cpu-ms: the CPU time the process had used by then, all its
//     threads (less noisy than the wall clock on a busy machine);
//   - start-MiB, peak-MiB: VmRSS and VmHWM right after that answer;
//   - idle-MiB: VmRSS once it has been idle for 2 s.
//
// Both are built as the pod image builds them (static, stripped:
// scripts/images.sh). CLLAMA_STARTUP_RUNS sets the number of runs
// (default 15); CLLAMA_STARTUP_BASE names another cllama binary (an older
// commit built the same way, say) that runs beside this one, in the same
// rounds, with the ratios printed. Run as the owner of the binary (root,
// say), each cllama's release of its start-up pages a second in evicts
// them from the page cache (MADV_PAGEOUT), so the next start reads them
// from the disk: slower than a restart where the process does not own
// its executable, as in a pod.
//
//	go test -run '^$' -bench Startup -benchtime 1x ./cmd/cllama/
func BenchmarkStartup(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	runs := 15
	if s := os.Getenv("CLLAMA_STARTUP_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("CLLAMA_STARTUP_RUNS=%q: want a count", s)
		}
		runs = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := b.TempDir()
	bin := buildAsImage(ctx, b, filepath.Join(dir, "cllama"), ".")
	floorBin := buildAsImage(ctx, b, filepath.Join(dir, "floorproxy"), "./testdata/floorproxy")
	svc := httptest.NewServer(http.HandlerFunc(floorService))
	b.Cleanup(svc.Close)
	root := filepath.Join(dir, "context")
	write(b, filepath.Join(root, "plain", "metadata.json"), `{"token":"plain:s"}`)
	write(b, filepath.Join(root, "tooled", "metadata.json"), `{"token":"tooled:s"}`)
	write(b, filepath.Join(root, "tooled", "tools.json"), `{"version":1,"tools":[{"name":"desk.ping","description":"ping","inputSchema":{"type":"object","properties":{}},
	 "execution":{"transport":"http","service":"desk","base_url":"`+svc.URL+`","method":"POST","path":"/ping"}}]}`)
	write(b, filepath.Join(dir, "auth", "providers.json"), `{"providers":{"fake":{"base_url":"`+svc.URL+`/v1","api_key":"k"}}}`)
	// Each process has a history and a state directory of its own: one
	// cllama holds a state directory at a time, and the last ones are
	// still idling while the next start.
	pod := func(extra ...string) func(run string) []string {
		return func(run string) []string {
			return append([]string{"CLAW_CONTEXT_ROOT=" + root, "CLAW_AUTH_DIR=" + filepath.Join(dir, "auth"),
				"CLAW_SESSION_HISTORY_DIR=" + filepath.Join(dir, "history", run),
				"CLLAMA_STATE_DIR=" + filepath.Join(dir, "state", run)}, extra...)
		}
	}
	type subject struct {
		name string
		bin  string
		args func(addr string) []string
	}
	cllamaArgs := func(addr string) []string { return []string{"-listen", addr} }
	subjects := []subject{{"cllama", bin, cllamaArgs}}
	if base := os.Getenv("CLLAMA_STARTUP_BASE"); base != "" {
		subjects = append(subjects, subject{"base", base, cllamaArgs})
	}
	subjects = append(subjects, subject{"floor", floorBin, func(addr string) []string { return []string{"-listen", addr, "-upstream", svc.URL} }})
	cases := []struct {
		name string
		env  func(run string) []string
	}{
		{"pod", pod()},
		{"pod+metrics", pod("CLLAMA_METRICS_ADDR=127.0.0.1:0")},
		// The collector need not listen: nothing is exported before a
		// request.
		{"pod+metrics+otlp", pod("CLLAMA_METRICS_ADDR=127.0.0.1:0", "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+freeAddr(b))},
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\nstart-up, medians of %d runs (MiB of VmRSS):\n", runs)
	fmt.Fprintln(tw, "CASE\tBINARY\tSTART\tSTART CPU\tRSS AT START\tPEAK\tRSS IDLE 2 s")
	defer tw.Flush()
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				got := map[string]*startFigures{}
				var (
					wg sync.WaitGroup
					mu sync.Mutex
				)
				for run := range runs {
					// Alternate the order, so that neither binary always
					// starts right after the other.
					order := subjects
					if run%2 == 1 {
						order = append([]subject(nil), subjects...)
						for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
							order[i], order[j] = order[j], order[i]
						}
					}
					for _, s := range order {
						if s.name == "floor" && tc.name != cases[0].name {
							continue // the floor has no configuration: once is enough
						}
						f := got[s.name]
						if f == nil {
							f = &startFigures{}
							got[s.name] = f
						}
						wg.Add(1)
						startOnce(ctx, b, s.bin, s.args, tc.env(fmt.Sprintf("%s-%s-%d", tc.name, s.name, run)), func(r startResult) {
							defer wg.Done()
							mu.Lock()
							defer mu.Unlock()
							f.add(r)
						})
					}
				}
				wg.Wait()
				for _, s := range subjects {
					f := got[s.name]
					if f == nil {
						continue
					}
					fmt.Fprintf(tw, "%s\t%s\t%.1f ms\t%.1f ms\t%.1f\t%.1f\t%.1f\n", tc.name, s.name,
						median(f.start), median(f.cpu), median(f.rss), median(f.peak), median(f.idle))
				}
				c := got["cllama"]
				b.ReportMetric(median(c.start), "start-ms")
				b.ReportMetric(median(c.cpu), "start-cpu-ms")
				b.ReportMetric(median(c.rss), "start-MiB")
				b.ReportMetric(median(c.peak), "peak-MiB")
				b.ReportMetric(median(c.idle), "idle-MiB")
				if floor := got["floor"]; floor != nil {
					fmt.Fprintf(tw, "%s\tcllama ÷ floor\t%.2f×\t%.2f×\t%.2f×\t%.2f×\t%.2f×\n", tc.name,
						median(c.start)/median(floor.start), median(c.cpu)/median(floor.cpu),
						median(c.rss)/median(floor.rss), median(c.peak)/median(floor.peak), median(c.idle)/median(floor.idle))
				}
				if base := got["base"]; base != nil {
					fmt.Fprintf(tw, "%s\tcllama ÷ base\t%.2f×\t%.2f×\t%.2f×\t%.2f×\t%.2f×\n", tc.name,
						median(c.start)/median(base.start), median(c.cpu)/median(base.cpu),
						median(c.rss)/median(base.rss), median(c.peak)/median(base.peak), median(c.idle)/median(base.idle))
				}
			}
		})
	}
}

type startFigures struct{ start, cpu, rss, peak, idle []float64 }

func (f *startFigures) add(r startResult) {
	f.start = append(f.start, float64(r.start)/float64(time.Millisecond))
	f.cpu = append(f.cpu, float64(r.cpu)/float64(time.Millisecond))
	f.rss = append(f.rss, mib(r.rss))
	f.peak = append(f.peak, mib(r.peak))
	f.idle = append(f.idle, mib(r.idle))
}

type startResult struct {
	start, cpu      time.Duration
	rss, peak, idle int64
}

// startOnce starts bin listening on a free loopback port and asks GET
// /health until it answers. done gets its figures once it has been idle
// for 2 s, and it is stopped: meanwhile the next one starts (an idle
// process costs the machine next to nothing, and runs take a fraction of
// the time).
func startOnce(ctx context.Context, b *testing.B, bin string, args func(addr string) []string, env []string, done func(startResult)) {
	addr := freeAddr(b)
	cmd := exec.CommandContext(ctx, bin, args(addr)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = io.Discard
	cmd.Stderr = io.Discard
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	for !answers(addr) {
		if time.Since(t0) > 30*time.Second {
			stop()
			b.Fatalf("%s did not answer on %s", bin, addr)
		}
		time.Sleep(200 * time.Microsecond)
	}
	r := startResult{start: time.Since(t0)}
	pid := cmd.Process.Pid
	r.cpu = procRunTime(b, pid)
	r.rss = procStatus(b, pid, "VmRSS")
	r.peak = procStatus(b, pid, "VmHWM")
	time.AfterFunc(2*time.Second, func() {
		defer stop()
		// Not procStatus: b.Fatal is for the benchmark's goroutine.
		idle, err := statusKB(pid, "VmRSS")
		if err != nil {
			b.Errorf("%s after 2 s: %v", bin, err)
		}
		r.idle = idle
		done(r)
	})
}

// answers reports whether an HTTP server answers GET /health at addr, on
// a new connection.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n"); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "HTTP/1.1 ")
}

// procRunTime is the CPU time all of pid's threads have used
// (/proc/<pid>/task/*/schedstat, in nanoseconds).
func procRunTime(b *testing.B, pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		b.Fatal(err)
	}
	var sum time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread has exited
		}
		f := bytes.Fields(data)
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(string(f[0]), 10, 64)
		sum += time.Duration(ns)
	}
	return sum
}

// statusKB reads a kB figure of /proc/<pid>/status, in bytes.
func statusKB(pid int, key string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// buildAsImage builds pkg into out as scripts/images.sh does for the pod
// image.
func buildAsImage(ctx context.Context, b *testing.B, out, pkg string) string {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", pkg, err, msg)
	}
	return out
}
