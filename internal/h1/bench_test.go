//go:build linux || darwin || freebsd || netbsd || openbsd

package h1

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/testproc"
)

// BenchmarkTransport sets h1 beside net/http's Transport in front of
// the same loopback server: a 1 KB POST answered with a small JSON body,
// one call at a time and 16 at once. The server is a process of its own
// (this test binary, started again), as an upstream is, so cpu-µs/op is
// the client's CPU alone. (With the server in the same process, the
// scheduler's behaviour is not the one a proxy sees.)
//
//	go test -run '^$' -bench Transport ./internal/h1/
func BenchmarkTransport(b *testing.B) {
	url := startServer(b)
	body := bytes.Repeat([]byte("x"), 1000)
	for _, tc := range []struct {
		name string
		rt   func() http.RoundTripper
	}{
		{"h1", func() http.RoundTripper { return &Transport{} }},
		{"net-http", func() http.RoundTripper { return &http.Transport{MaxIdleConnsPerHost: 64} }},
	} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c=%d", tc.name, conc), func(b *testing.B) {
				rt := tc.rt()
				defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
				b.ReportAllocs()
				cpu0 := processCPU()
				if conc == 1 {
					for b.Loop() {
						call(b, rt, url, body)
					}
				} else {
					b.SetParallelism((conc + 1) / 2)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							call(b, rt, url, body)
						}
					})
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
			})
		}
	}
}

const serverEnv = "CLAWGO_H1_BENCH_SERVER"

func init() {
	if os.Getenv(serverEnv) == "1" {
		os.Exit(serve())
	}
}

// serve is the benchmark's server process: its URL on stdout, until
// stdin closes.
func serve() int {
	answer := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	fmt.Println(srv.URL)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startServer starts the server process and returns its URL.
func startServer(b *testing.B) string {
	f := testproc.Helper(b, serverEnv)
	if len(f) != 1 {
		b.Fatalf("server process said %q", f)
	}
	return f[0]
}

func call(b *testing.B, rt http.RoundTripper, url string, body []byte) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header["Content-Type"] = []string{"application/json"}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
