package mediate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/sse"
	"github.com/clawdapus/clawgo/internal/toolexec"
	wireopenai "github.com/clawdapus/clawgo/internal/wire/openai"
)

// BenchmarkLiveFirstText times a streamed mediated turn to its first text
// byte at the runner, over HTTP end to end: round 1 calls a managed tool
// that takes 100 ms to answer, round 2 streams 50 text chunks 20 ms
// apart. The baseline, measured in the same run directly against the same
// fake provider and service, is round 1 read whole + the tool call + round
// 2 up to its first chunk: what no proxy can beat. It reports the first
// text byte (first-text-ms), the baseline (baseline-ms), their ratio
// (ratio; the target is at most 1.2) and the whole turn (turn-ms, and
// replay-ratio against the baseline: what the first byte cost when cllama
// replayed the answer at the end of the turn). The
// "text-first" case has the model write a sentence before its tool call:
// the first byte then comes with round 1's first chunk, and the baseline
// is that chunk read directly.
func BenchmarkLiveFirstText(b *testing.B) {
	for _, textFirst := range []bool{false, true} {
		name := "tool-first"
		if textFirst {
			name = "text-first"
		}
		b.Run(name, func(b *testing.B) { benchLiveFirstText(b, textFirst) })
	}
}

const (
	benchToolDelay = 100 * time.Millisecond
	benchChunks    = 50
	benchGap       = 20 * time.Millisecond
)

// fakeStreamingProvider streams OpenAI chat answers: the first request of
// each turn gets round 1 (a managed call, text first when asked), the
// second round 2 (benchChunks chunks benchGap apart).
func fakeStreamingProvider(textFirst bool) *httptest.Server {
	k := openaiKit{}
	f := wireopenai.Format{}
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		round := n.Add(1) % 2
		s := step{Calls: []tcall{call("c1", "svc__quote", `{"q":"ABC"}`)}, Usage: u(100, 10)}
		if textFirst {
			s.Text = "Let me look that up. "
		}
		gap := time.Duration(0)
		if round == 0 {
			s = step{Text: strings.Repeat("x", 256*benchChunks), Usage: u(120, 200)}
			gap = benchGap
		}
		resp, _ := f.ParseResponse(k.upstreamResponse(s, int(round)))
		events, _ := f.StreamEvents(resp, resp.Usage, true)
		sse.PrepareHeader(w.Header())
		w.WriteHeader(http.StatusOK)
		sw := sse.NewWriter(w)
		for i, e := range events {
			if i > 1 && gap > 0 { // after the role chunk and the first text chunk
				time.Sleep(gap)
			}
			if sw.Event(sse.Event{Name: e.Name, Data: e.Data}) != nil {
				return
			}
		}
	}))
}

// firstText reads an OpenAI chat stream until its first content delta and
// returns when that came; whole reads the rest too.
func firstText(b *testing.B, body io.Reader, whole bool) (first bool) {
	br := bufio.NewReader(body)
	for ev, err := range sse.Parse(br, 0) {
		if err != nil {
			b.Fatal(err)
		}
		if first || len(ev.Data) == 0 || ev.Data[0] != '{' {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(ev.Data, &c) == nil && len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			first = true
			if !whole {
				return true
			}
		}
	}
	return first
}

func benchLiveFirstText(b *testing.B, textFirst bool) {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(benchToolDelay)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"price":190.5}`))
	}))
	defer svc.Close()
	prov := fakeStreamingProvider(textFirst)
	defer prov.Close()
	ex := toolexec.New(toolexec.Options{})
	defer ex.Close()
	m, err := New(Options{Runner: ex, KeepaliveInterval: 50 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	agent := &agentctx.Agent{ID: "bench-0", Tools: &manifest.Tools{Version: 1, Policy: manifest.DefaultPolicy(), Tools: []manifest.Tool{{
		Name: "svc.quote", Description: "a quote", InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		Execution: manifest.Execution{Transport: "http", Service: "svc", BaseURL: svc.URL, Method: "POST", Path: "/quote"},
	}}}}
	k := openaiKit{}
	body := k.runnerRequest(hello, nil, true, nil)
	post := func(ctx context.Context, url string, b []byte) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return http.DefaultClient.Do(req)
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		x := &exchange.Exchange{ID: "r", Start: time.Now(), Agent: agent, Format: k.format(), Model: "p/m", UpstreamModel: "up-model", Stream: true, Original: in, Body: in,
			Send: func(ctx context.Context, b []byte) (*http.Response, error) { return post(ctx, prov.URL, b) }}
		m.Mediate(w, r, x)
	}))
	defer front.Close()
	upBody := func() []byte { // what cllama sends: streaming, with usage
		var top map[string]any
		_ = json.Unmarshal(body, &top)
		top["stream"], top["stream_options"] = true, map[string]any{"include_usage": true}
		return mustJSON(top)
	}()
	direct := func() time.Duration {
		start := time.Now()
		res, err := post(context.Background(), prov.URL, upBody)
		if err != nil {
			b.Fatal(err)
		}
		if textFirst { // the first byte is round 1's first chunk
			firstText(b, res.Body, false)
			d := time.Since(start)
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			// round 2 keeps the provider's turn in step
			res, err = post(context.Background(), prov.URL, upBody)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			return d
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		tool, err := post(context.Background(), svc.URL, []byte(`{"q":"ABC"}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, tool.Body)
		tool.Body.Close()
		res, err = post(context.Background(), prov.URL, upBody)
		if err != nil {
			b.Fatal(err)
		}
		firstText(b, res.Body, false)
		d := time.Since(start)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return d
	}
	through := func() (first, whole time.Duration) {
		start := time.Now()
		res, err := post(context.Background(), front.URL, body)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		br := bufio.NewReader(res.Body)
		if !firstText(b, br, false) {
			b.Fatal("no text reached the runner")
		}
		first = time.Since(start)
		_, _ = io.Copy(io.Discard, br)
		return first, time.Since(start)
	}
	direct() // connections warmed
	through()
	var firsts, wholes, bases []time.Duration
	for b.Loop() {
		bases = append(bases, direct())
		f, w := through()
		firsts, wholes = append(firsts, f), append(wholes, w)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	f, w, base := median(firsts), median(wholes), median(bases)
	b.ReportMetric(ms(f), "first-text-ms")
	b.ReportMetric(ms(base), "baseline-ms")
	b.ReportMetric(float64(f)/float64(base), "ratio")
	b.ReportMetric(ms(w), "turn-ms")
	b.ReportMetric(float64(w)/float64(base), "replay-ratio")
	b.ReportMetric(0, "ns/op")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
