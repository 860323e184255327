package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/testproc"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/audit"
)

// events collects what a Manager emits.
type events struct {
	mu sync.Mutex
	ev []audit.Event
}

func (e *events) emit(ev audit.Event) { e.mu.Lock(); e.ev = append(e.ev, ev); e.mu.Unlock() }

func (e *events) of(typ string) []audit.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []audit.Event
	for _, ev := range e.ev {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// pending waits until m's store lists n pending requests and returns them.
func pending(t *testing.T, s Store, n int) []*Request {
	t.Helper()
	for i := 0; i < 2000; i++ {
		rs, err := s.Pending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == n {
			return rs
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never %d pending", n)
	return nil
}

func held() Held {
	return Held{Agent: "tiverton", Tool: "trading-api.execute_trade", Service: "trading-api", Mode: "mediated",
		Arguments: json.RawMessage(`{"symbol":"NVDA","quantity":500,"price":120.5,"claw_id":"tiverton"}`), Rule: "always (x)", Timeout: time.Minute}
}

// api serves m's routes and returns a function posting to them.
func api(t *testing.T, m *Manager) (*httptest.Server, func(method, path, body string) (int, map[string]any)) {
	mux := http.NewServeMux()
	m.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		data, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s %s: %s", method, path, data)
		}
		return resp.StatusCode, out
	}
}

func TestApproveReleasesTheCallWithItsArguments(t *testing.T) {
	ev := &events{}
	var alerts []map[string]any
	m := New(Options{Emit: ev.emit, Alert: func(_ string, f map[string]any) { alerts = append(alerts, f) }})
	_, do := api(t, m)
	done := make(chan *Request)
	h := held()
	go func() { done <- m.Hold(context.Background(), h) }()
	rs := pending(t, m.Store(), 1)
	r := rs[0]
	if !ValidID(r.ID) || r.ArgumentsSHA256 != Digest(h.Arguments) || r.Tool != h.Tool || r.Agent != "tiverton" || !r.ExpiresAt.After(r.CreatedAt) {
		t.Fatalf("request %+v", r)
	}
	code, list := do("GET", "/api/approvals", "")
	if code != 200 || len(list["approvals"].([]any)) != 1 {
		t.Fatalf("list: %d %v", code, list)
	}
	code, got := do("GET", "/api/approvals/"+r.ID, "")
	if code != 200 || got["arguments_sha256"] != r.ArgumentsSHA256 || got["state"] != Pending {
		t.Fatalf("get: %d %v", code, got)
	}
	code, got = do("POST", "/api/approvals/"+r.ID, `{"decision":"approve","by":"ops-alice","arguments_sha256":"`+r.ArgumentsSHA256+`"}`)
	if code != 200 || got["state"] != Approved || got["by"] != "ops-alice" {
		t.Fatalf("approve: %d %v", code, got)
	}
	f := <-done
	if f.State != Approved || !bytes.Equal(f.Arguments, h.Arguments) || f.ArgumentsSHA256 != Digest(h.Arguments) {
		t.Fatalf("final %+v", f)
	}
	// Single use: the same request cannot be decided again.
	if code, got = do("POST", "/api/approvals/"+r.ID, `{"decision":"deny","reason":"late"}`); code != 409 || got["approval"].(map[string]any)["state"] != Approved {
		t.Fatalf("second decision: %d %v", code, got)
	}
	if code, _ = do("POST", "/api/approvals/"+NewID(), `{"decision":"approve"}`); code != 404 {
		t.Fatalf("unknown id: %d", code)
	}
	if code, _ = do("GET", "/api/approvals/not-an-id", ""); code != 404 {
		t.Fatalf("bad id: %d", code)
	}
	if code, list = do("GET", "/api/approvals", ""); code != 200 || len(list["approvals"].([]any)) != 0 {
		t.Fatalf("list after: %v", list)
	}
	d := ev.of(audit.TypeApprovalDecided)
	if len(ev.of(audit.TypeApprovalRequested)) != 1 || len(d) != 1 || d[0].Approval.Decision != Approved || d[0].Approval.By != "ops-alice" || d[0].Approval.WaitMS == nil {
		t.Fatalf("events %+v", ev.ev)
	}
	if len(alerts) != 1 || alerts[0]["id"] != r.ID || alerts[0]["approve"] != "claw approve "+r.ID {
		t.Fatalf("alerts %v", alerts)
	}
}

func TestDenyTimeoutCancelAndMismatch(t *testing.T) {
	m := New(Options{})
	_, do := api(t, m)
	// Deny, with its reason.
	done := make(chan *Request)
	go func() { done <- m.Hold(context.Background(), held()) }()
	r := pending(t, m.Store(), 1)[0]
	if code, got := do("POST", "/api/approvals/"+r.ID, `{"decision":"deny"}`); code != 400 || !strings.Contains(fmt.Sprint(got), "reason") {
		t.Fatalf("deny without reason: %d %v", code, got)
	}
	// A decision bound to other arguments is not applied.
	if code, _ := do("POST", "/api/approvals/"+r.ID, `{"decision":"approve","arguments_sha256":"`+strings.Repeat("0", 64)+`"}`); code != 409 {
		t.Fatalf("mismatch: %d", code)
	}
	if code, _ := do("POST", "/api/approvals/"+r.ID, `{"decision":"deny","reason":"too large"}`); code != 200 {
		t.Fatal(code)
	}
	if f := <-done; f.State != Denied || f.Reason != "too large" || f.By != "operator" {
		t.Fatalf("denied %+v", f)
	}
	// Timeout.
	h := held()
	h.Timeout = 20 * time.Millisecond
	f := m.Hold(context.Background(), h)
	if f.State != Timeout {
		t.Fatalf("timeout %+v", f)
	}
	if code, _ := do("POST", "/api/approvals/"+f.ID, `{"decision":"approve"}`); code != 409 {
		t.Fatalf("approve after timeout: %d", code)
	}
	// The caller goes away.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- m.Hold(ctx, held()) }()
	pending(t, m.Store(), 1)
	cancel()
	if f := <-done; f.State != Cancelled {
		t.Fatalf("cancelled %+v", f)
	}
}

func TestARestartEndsPendingRequestsLost(t *testing.T) {
	dir := t.TempDir()
	s, lost, err := OpenLocal(dir, time.Now())
	if err != nil || len(lost) != 0 {
		t.Fatal(err, lost)
	}
	m := New(Options{Store: s})
	go m.Hold(context.Background(), held()) // the process "stops" while it waits
	r := pending(t, s, 1)[0]
	// A new process on the same directory.
	s2, lost, err := OpenLocal(dir, time.Now())
	if err != nil || len(lost) != 1 || lost[0].ID != r.ID || lost[0].State != Lost {
		t.Fatalf("lost %v %v", lost, err)
	}
	ev := &events{}
	m2 := New(Options{Store: s2, Emit: ev.emit})
	m2.Lost(lost)
	if d := ev.of(audit.TypeApprovalDecided); len(d) != 1 || d[0].Approval.Decision != Lost {
		t.Fatalf("events %+v", ev.ev)
	}
	_, do := api(t, m2)
	if code, got := do("POST", "/api/approvals/"+r.ID, `{"decision":"approve"}`); code != 409 || got["approval"].(map[string]any)["state"] != Lost {
		t.Fatalf("approving a lost request: %d %v", code, got)
	}
	if _, lost, _ := OpenLocal(dir, time.Now()); len(lost) != 0 {
		t.Fatalf("found again: %v", lost)
	}
}

// redisURL starts a redis-server of the test's own, or skips when the
// binary is missing.
func redisURL(tb testing.TB) string {
	return testproc.Redis(tb)
}

func redisStore(t *testing.T, url, replica string) *Redis {
	opts, _ := redis.ParseURL(url)
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	s, err := NewRedis(context.Background(), c, "pod", replica, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestADecisionThroughAnyReplicaReleasesTheCall(t *testing.T) {
	url := redisURL(t)
	a, b := redisStore(t, url, "a"), redisStore(t, url, "b")
	// A polls rarely: it is the published decision that releases it.
	ma, mb := New(Options{Store: a, Replica: "a", Poll: time.Hour}), New(Options{Store: b, Replica: "b"})
	_, doB := api(t, mb)
	done := make(chan *Request)
	h := held()
	go func() { done <- ma.Hold(context.Background(), h) }()
	r := pending(t, b, 1)[0]
	if r.Replica != "a" || r.ArgumentsSHA256 != Digest(h.Arguments) || !bytes.Equal(r.Arguments, h.Arguments) {
		t.Fatalf("seen from b: %+v", r)
	}
	if code, got := doB("POST", "/api/approvals/"+r.ID, `{"decision":"approve","by":"ops"}`); code != 200 || got["state"] != Approved {
		t.Fatalf("%d %v", code, got)
	}
	if f := <-done; f.State != Approved || f.By != "ops" || !bytes.Equal(f.Arguments, h.Arguments) {
		t.Fatalf("released %+v", f)
	}
	if code, _ := doB("POST", "/api/approvals/"+r.ID, `{"decision":"deny","reason":"x"}`); code != 409 {
		t.Fatalf("second decision: %d", code)
	}
	// Deny through a, held on b.
	_, doA := api(t, ma)
	go func() { done <- mb.Hold(context.Background(), h) }()
	r = pending(t, a, 1)[0]
	if code, _ := doA("POST", "/api/approvals/"+r.ID, `{"decision":"deny","reason":"no"}`); code != 200 {
		t.Fatal(code)
	}
	if f := <-done; f.State != Denied || f.Reason != "no" {
		t.Fatalf("denied %+v", f)
	}
}

func TestARequestOfAStoppedReplicaIsLost(t *testing.T) {
	url := redisURL(t)
	a, b := redisStore(t, url, "a"), redisStore(t, url, "b")
	ma := New(Options{Store: a, Replica: "a"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ma.Hold(ctx, held())
	r := pending(t, b, 1)[0]
	// Replica a stops (its lease is dropped; a crash lets it expire).
	a.Close()
	rs, err := b.Pending(context.Background())
	if err != nil || len(rs) != 0 {
		t.Fatalf("pending after a stopped: %v %v", rs, err)
	}
	f, err := b.Get(context.Background(), r.ID)
	if err != nil || f.State != Lost {
		t.Fatalf("%+v %v", f, err)
	}
	if _, err := b.Decide(context.Background(), r.ID, Decision{State: Approved, By: "x"}, time.Now()); err != ErrDecided {
		t.Fatalf("approving a lost request: %v", err)
	}
}

func FuzzParseDecision(f *testing.F) {
	for _, s := range []string{`{"decision":"approve"}`, `{"decision":"deny","reason":"r","by":"b"}`, `{"decision":"approve","Decision":"deny"}`,
		`{"decision":"approve","decision":"deny"}`, `{"decision":"deny","reason":"\u001b[2J"}`, `[]`, `{"decision":"approve"} x`,
		`{"decision":"approve","arguments_sha256":"` + strings.Repeat("a", 64) + `"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDecision(data)
		if err != nil {
			return
		}
		// What was accepted is what encoding/json reads, written once.
		var ref map[string]any
		if json.Unmarshal(data, &ref) != nil {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		want := map[string]string{"approve": Approved, "deny": Denied}[fmt.Sprint(ref["decision"])]
		if d.State != want || want == "" {
			t.Fatalf("%q: state %q", data, d.State)
		}
		if d.State == Denied && d.Reason == "" {
			t.Fatalf("%q: denied without a reason", data)
		}
		for _, s := range []string{d.Reason, d.By} {
			for _, r := range s {
				if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
					t.Fatalf("%q: control character kept", data)
				}
			}
		}
		if d.By == "" || len(d.Reason) > MaxReasonBytes || len(d.By) > MaxByBytes {
			t.Fatalf("%q: %+v", data, d)
		}
	})
}
