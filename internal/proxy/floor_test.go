package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// The floor: a bare Go reverse proxy (httputil.ReverseProxy with a
// keep-alive pool; no identity, history, audit or rewriting) in front of
// the same fake provider, measured in the same run as cllama and the
// direct path. Each figure is reported as cllama's added cost over the
// floor's; TestMain prints the summary table after the benchmarks.

// floorRow is one figure of the summary: the direct path, the floor and
// cllama.
type floorRow struct {
	figure                 string
	direct, floor, cllama  float64
	unit                   string
	addedFloor, addedProxy float64
}

var (
	floorMu   sync.Mutex
	floorRows = map[string]floorRow{}
)

func recordFloor(r floorRow) {
	floorMu.Lock()
	floorRows[r.figure] = r
	floorMu.Unlock()
}

func TestMain(m *testing.M) {
	code := m.Run()
	floorMu.Lock()
	defer floorMu.Unlock()
	if len(floorRows) > 0 {
		names := make([]string, 0, len(floorRows))
		for n := range floorRows {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Println("\ncllama against the floor (a bare reverse proxy), same run:")
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FIGURE\tDIRECT\tFLOOR\tCLLAMA\tADDED: FLOOR\tADDED: CLLAMA\tCLLAMA ÷ FLOOR")
		for _, n := range names {
			r := floorRows[n]
			ratio := "-"
			if r.addedFloor > 0 {
				ratio = fmt.Sprintf("%.2f×", r.addedProxy/r.addedFloor)
			}
			fmt.Fprintf(tw, "%s\t%.0f %s\t%.0f %s\t%.0f %s\t%.0f\t%.0f\t%s\n", r.figure, r.direct, r.unit, r.floor, r.unit, r.cllama, r.unit, r.addedFloor, r.addedProxy, ratio)
		}
		_ = tw.Flush()
	}
	os.Exit(code)
}

// newFloor is a bare reverse proxy to the rig's provider.
func newFloor(b *testing.B, upstream string) string {
	u, err := url.Parse(upstream)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}
	rp.FlushInterval = -1 // streams flushed as they come, as cllama does
	srv := httptest.NewServer(rp)
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkFloor measures each path in turn (direct, floor, cllama) with
// c concurrent clients: median latency (and time to first byte for
// streams) and the process's CPU per request. The process runs the
// clients, the provider and the proxies, so a proxy's own CPU is its
// figure minus the direct path's.
func BenchmarkFloor(b *testing.B) {
	cases := []struct {
		name    string
		c       int
		stream  bool
		request func(string, bool) []byte
	}{
		{"1 KB json c=1", 1, false, benchRequest},
		{"1 KB json c=32", 32, false, benchRequest},
		{"200 KB json c=8", 8, false, bigRequest},
		{"200 KB json c=64", 64, false, bigRequest},
		{"stream c=16", 16, true, benchRequest},
	}
	for _, tc := range cases {
		b.Run(strings.ReplaceAll(tc.name, " ", "_"), func(b *testing.B) {
			rig := newBenchRig(b, true)
			floor := newFloor(b, rig.upstream)
			type result struct {
				p50, ttfb time.Duration
				cpu       float64
			}
			run := func(url string, body []byte) result {
				for range 20 {
					rig.do(b, url, body)
				}
				per := max(b.N/tc.c, 1)
				var mu sync.Mutex
				var lat, first []time.Duration
				cpu0 := cpuTime()
				var wg sync.WaitGroup
				for range tc.c {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range per {
							l, f := rig.doTTFB(b, url, body)
							mu.Lock()
							lat, first = append(lat, l), append(first, f)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				n := float64(len(lat))
				return result{p50: percentile(lat, 0.5), ttfb: percentile(first, 0.5), cpu: float64((cpuTime() - cpu0).Microseconds()) / n}
			}
			b.ResetTimer()
			d := run(rig.upstream+"/v1/chat/completions", tc.request("gpt-fake", tc.stream))
			f := run(floor+"/v1/chat/completions", tc.request("gpt-fake", tc.stream))
			p := run(rig.proxy+pathChat, tc.request("fake/gpt-fake", tc.stream))
			b.StopTimer()
			us := func(d time.Duration) float64 { return float64(d.Microseconds()) }
			lat := floorRow{figure: tc.name + ": p50", unit: "µs", direct: us(d.p50), floor: us(f.p50), cllama: us(p.p50),
				addedFloor: us(f.p50 - d.p50), addedProxy: us(p.p50 - d.p50)}
			cpu := floorRow{figure: tc.name + ": CPU/request", unit: "µs", direct: d.cpu, floor: f.cpu, cllama: p.cpu,
				addedFloor: f.cpu - d.cpu, addedProxy: p.cpu - d.cpu}
			recordFloor(lat)
			recordFloor(cpu)
			if tc.stream {
				recordFloor(floorRow{figure: tc.name + ": first byte p50", unit: "µs", direct: us(d.ttfb), floor: us(f.ttfb), cllama: us(p.ttfb),
					addedFloor: us(f.ttfb - d.ttfb), addedProxy: us(p.ttfb - d.ttfb)})
			}
			if lat.addedFloor > 0 {
				b.ReportMetric(lat.addedProxy/lat.addedFloor, "p50-added-÷-floor")
			}
			if cpu.addedFloor > 0 {
				b.ReportMetric(cpu.addedProxy/cpu.addedFloor, "cpu-added-÷-floor")
			}
		})
	}
}
