package mediate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/resultstore"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

const readResult = "claw__read_result"

// bigReport is a 5 MB text report with a few lines worth finding.
func bigReport() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 5<<20; i++ {
		if i%25000 == 4242 {
			fmt.Fprintf(&b, "%07d BREACH book=rates-%d over its limit\n", i, i)
			continue
		}
		fmt.Fprintf(&b, "%07d book within limits; exposure unchanged since the open\n", i)
	}
	return b.Bytes()
}

// withReport gives h's agent svc.report, answering body as text.
func withReport(t *testing.T, h *harness, body []byte) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	tools := *h.agent.Tools
	tools.Tools = append(slices.Clone(tools.Tools), manifest.Tool{Name: "svc.report", Description: "the day's risk report", InputSchema: json.RawMessage(`{"type":"object"}`),
		Execution: manifest.Execution{Transport: "http", Service: "svc", BaseURL: srv.URL, Method: "GET", Path: "/report"}})
	h.agent.Tools = &tools
}

// lastEnvelope is the envelope of the last tool result in req.
func lastEnvelope(t *testing.T, req upReq) toolexec.Envelope {
	t.Helper()
	for i := len(req.Msgs) - 1; i >= 0; i-- {
		if rs := req.Msgs[i].Results; len(rs) > 0 {
			return rs[len(rs)-1].Env
		}
	}
	t.Fatal("no tool result in the request")
	return toolexec.Envelope{}
}

// TestKeptResultPagedAndSearched: a 5 MB result over the cap reaches the
// model as a head with a handle; the model, offered claw.read_result from
// then on, pages it by range and searches it, in this turn and the next
// of the conversation; another conversation cannot read it.
func TestKeptResultPagedAndSearched(t *testing.T) {
	body := bigReport()
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			store, err := resultstore.OpenLocal(resultstore.LocalOptions{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, k, harnessOptions{results: store})
			withReport(t, h, body)
			var handle string
			var page, found toolexec.Envelope
			h.up.script = []step{
				{Calls: []tcall{call("r1", "svc__report", `{}`)}},
				{Dyn: func(req upReq) step {
					env := lastEnvelope(t, req)
					handle = env.ResultHandle
					return step{Calls: []tcall{call("r2", readResult, fmt.Sprintf(`{"handle":%q,"offset":1000000,"length":5000}`, handle))}}
				}},
				{Dyn: func(req upReq) step {
					page = lastEnvelope(t, req)
					return step{Calls: []tcall{call("r3", readResult, fmt.Sprintf(`{"handle":%q,"grep":"BREACH book=rates-\\d+","regex":true}`, handle))}}
				}},
				{Dyn: func(req upReq) step {
					found = lastEnvelope(t, req)
					return step{Text: "two breaches"}
				}},
			}
			res := h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil))
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			h.waitEntries(t, 1)
			up := h.up.requests()
			if slices.Contains(up[0].Tools, readResult) {
				t.Fatal("claw.read_result offered before the conversation held a handle")
			}
			if !slices.Contains(up[1].Tools, readResult) {
				t.Fatalf("claw.read_result not offered once a handle was held: %v", up[1].Tools)
			}
			first := lastEnvelope(t, up[1])
			if !first.Truncated || first.OriginalBytes != len(body) || first.ResultHandle == "" {
				t.Fatalf("first envelope: truncated %v, original_bytes %d (want %d), handle %q", first.Truncated, first.OriginalBytes, len(body), first.ResultHandle)
			}
			if n := len(up[1].Msgs[len(up[1].Msgs)-1].Results[0].Raw); n > manifest.DefaultMaxToolResultBytes {
				t.Fatalf("envelope of %d bytes over the cap", n)
			}
			var r struct {
				Offset, Length int
				Text           string
			}
			if err := json.Unmarshal(page.Data, &r); err != nil || !page.OK {
				t.Fatalf("range read: %+v (%v)", page, err)
			}
			if r.Offset != 1000000 || r.Length != 5000 || r.Text != string(body[1000000:1005000]) {
				t.Fatalf("range read: offset %d length %d, text differs from the report's bytes", r.Offset, r.Length)
			}
			var g struct {
				Matches []struct {
					Offset int
					Text   string
				}
				Count int
			}
			if err := json.Unmarshal(found.Data, &g); err != nil || g.Count != bytes.Count(body, []byte("BREACH")) {
				t.Fatalf("search: %s (%v)", found.Data, err)
			}
			for _, m := range g.Matches {
				if !bytes.HasPrefix(body[m.Offset:], []byte(m.Text)) {
					t.Fatalf("match at %d is not the report's line there", m.Offset)
				}
			}
			var stored, read int
			for _, e := range h.audit.events() {
				switch e.Type {
				case audit.TypeResultStored:
					stored++
					if e.Handle != handle || e.Tool != "svc.report" || e.Bytes == nil || *e.Bytes != len(body) {
						t.Errorf("result_stored: %+v", e)
					}
				case audit.TypeResultRead:
					read++
					if e.Handle != handle || e.Bytes == nil {
						t.Errorf("result_read: %+v", e)
					}
				}
			}
			if stored != 1 || read != 2 {
				t.Fatalf("%d result_stored and %d result_read events, want 1 and 2", stored, read)
			}

			// The next turn of the conversation reads the handle again.
			h.up.script = append(h.up.script, step{Dyn: func(req upReq) step {
				return step{Calls: []tcall{call("r4", readResult, fmt.Sprintf(`{"handle":%q,"length":100}`, handle))}}
			}}, step{Dyn: func(req upReq) step {
				page = lastEnvelope(t, req)
				return step{Text: "ok"}
			}})
			next := []tmsg{hello[0], {Role: "assistant", Text: "two breaches"}, {Role: "user", Text: "show the top"}}
			res = h.post(context.Background(), k.runnerRequest(next, []string{"shell"}, false, nil))
			if res.StatusCode != http.StatusOK {
				t.Fatalf("second turn: status %d", res.StatusCode)
			}
			h.waitEntries(t, 2)
			if !page.OK || !strings.Contains(string(page.Data), string(body[:60])) {
				t.Fatalf("second turn's read: %+v", page)
			}

			// Another conversation holding a handle of its own cannot
			// read this one: unknown_handle, as for a made-up handle.
			h.up.script = append(h.up.script, step{Calls: []tcall{call("o1", "svc__report", `{}`)}}, step{Dyn: func(upReq) step {
				return step{Calls: []tcall{call("o2", readResult, fmt.Sprintf(`{"handle":%q}`, handle)), call("o3", readResult, fmt.Sprintf(`{"handle":%q}`, resultstore.NewHandle()))}}
			}}, step{Dyn: func(req upReq) step {
				rs := req.Msgs[len(req.Msgs)-1].Results
				for _, r := range rs {
					if r.Env.OK || r.Env.Error.Code != "unknown_handle" {
						t.Errorf("read from another conversation: %+v", r.Env)
					}
				}
				return step{Text: "no"}
			}})
			other := []tmsg{{Role: "user", Text: "another conversation"}}
			res = h.post(context.Background(), k.runnerRequest(other, []string{"shell"}, false, nil))
			if res.StatusCode != http.StatusOK {
				t.Fatalf("other conversation: status %d", res.StatusCode)
			}
			h.waitEntries(t, 3)
		})
	}
}

// TestKeptResultExpires: after result-ttl, on the store's clock, the
// handle reads unknown_handle.
func TestKeptResultExpires(t *testing.T) {
	k := kits[0]
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	var passed atomic.Int64
	clock := func() time.Time { return start.Add(time.Duration(passed.Load())) }
	store, err := resultstore.OpenLocal(resultstore.LocalOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, k, harnessOptions{results: store, policy: manifest.Policy{ResultTTLMS: 30 * 60 * 1000}})
	withReport(t, h, bigReport()[:100000])
	var handle string
	var late toolexec.Envelope
	h.up.script = []step{
		{Calls: []tcall{call("r1", "svc__report", `{}`)}},
		{Dyn: func(req upReq) step {
			handle = lastEnvelope(t, req).ResultHandle
			passed.Add(int64(30 * time.Minute))
			return step{Calls: []tcall{call("r2", readResult, fmt.Sprintf(`{"handle":%q}`, handle))}}
		}},
		{Dyn: func(req upReq) step { late = lastEnvelope(t, req); return step{Text: "gone"} }},
	}
	res := h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, false, nil))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	h.waitEntries(t, 1)
	if handle == "" || late.OK || late.Error.Code != "unknown_handle" {
		t.Fatalf("a read at result-ttl: %+v", late)
	}
}
