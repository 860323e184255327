package alerts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// receiver is a webhook receiver that verifies every signature the way an
// operator's would, failing the first failures requests with a 503.
type receiver struct {
	secret   string
	failures atomic.Int32
	mu       sync.Mutex
	events   []map[string]any
	badSigs  int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if r.failures.Add(-1) >= 0 {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !Verify(r.secret, body, req.Header.Get(SignatureHeader)) {
		r.badSigs++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.events = append(r.events, ev)
}

func TestWebhookSignsRetriesAndCarriesNoSecret(t *testing.T) {
	rcv := &receiver{secret: "s3cret-for-hmac"}
	rcv.failures.Store(2)
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	w := NewWebhook(&manifest.Alerts{Webhook: srv.URL + "/hook", Secret: rcv.secret}, "desk",
		Options{Backoff: time.Millisecond, Now: func() time.Time { return now }})
	defer w.Close()
	w.Alert("approval_requested", map[string]any{"id": "ab12", "agent": "trader"})
	w.Alert("budget_exceeded", map[string]any{"agent": "analyst", "unit": "usd"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.badSigs != 0 || len(rcv.events) != 2 {
		t.Fatalf("events %v, bad signatures %d; want both events delivered, signed, after the receiver's two failures", rcv.events, rcv.badSigs)
	}
	first := rcv.events[0]
	if first["event"] != "approval_requested" || first["pod"] != "desk" || first["time"] != "2026-11-27T12:00:00Z" || first["id"] != "ab12" {
		t.Errorf("first event = %v", first)
	}
	if rcv.events[1]["event"] != "budget_exceeded" {
		t.Errorf("events out of order: %v", rcv.events)
	}
	for _, ev := range rcv.events {
		for k, v := range ev {
			if s, ok := v.(string); ok && s == rcv.secret {
				t.Errorf("event carries the secret in %q", k)
			}
		}
	}
}

func TestWebhookNeverBlocksAndDropsOldestWhenFull(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	w := NewWebhook(&manifest.Alerts{Webhook: srv.URL, Secret: "x"}, "p", Options{Queue: 4, Attempts: 1})
	defer w.Close()
	done := make(chan struct{})
	go func() {
		for i := 0; i < 100; i++ {
			w.Alert("key_cooldown", map[string]any{"i": i})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Alert blocked while the receiver hung")
	}
	if d := w.Dropped(); d < 100-4-1 {
		t.Errorf("dropped %d events, want at least %d with a queue of 4", d, 100-4-1)
	}
}

func TestVerifyRejectsOtherSecretsAndBodies(t *testing.T) {
	sig := Sign("a", []byte(`{"event":"x"}`))
	if !Verify("a", []byte(`{"event":"x"}`), sig) {
		t.Fatal("own signature refused")
	}
	if Verify("b", []byte(`{"event":"x"}`), sig) || Verify("a", []byte(`{"event":"y"}`), sig) || Verify("a", []byte(`{"event":"x"}`), "sha256=00") {
		t.Fatal("a wrong secret, body or signature verified")
	}
}

func TestNewWithoutConfigDiscards(t *testing.T) {
	if New(nil, "p", Options{}) != Discard {
		t.Fatal("a pod without x-claw.alerts must get Discard")
	}
}

func TestLimiterAdmitsAHandfulPerWindow(t *testing.T) {
	now := time.Unix(0, 0)
	l := NewLimiter(time.Minute, 3).WithClock(func() time.Time { return now })
	n := 0
	for i := 0; i < 50; i++ {
		if l.Allow("circuit_open/openai") {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("admitted %d of a storm of 50, want 3", n)
	}
	if !l.Allow("circuit_open/anthropic") {
		t.Fatal("another key is limited by the first one's storm")
	}
	now = now.Add(time.Minute)
	if !l.Allow("circuit_open/openai") {
		t.Fatal("a new window admits nothing")
	}
}
