package console

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/histindex"
)

func TestLiveCountsTheLastFiveMinutes(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	l := NewLive(func() time.Time { return now })
	l.Event(&audit.Event{Type: audit.TypeResponse, ClawID: "a", StatusCode: 200, TS: now.Add(-6 * time.Minute)})
	l.Event(&audit.Event{Type: audit.TypeResponse, ClawID: "a", StatusCode: 200, TS: now.Add(-time.Minute)})
	l.Event(&audit.Event{Type: audit.TypeResponse, ClawID: "a", StatusCode: 502, TS: now.Add(-time.Minute)})
	l.Event(&audit.Event{Type: audit.TypeError, ClawID: "a", StatusCode: 429, TS: now})
	l.Event(&audit.Event{Type: audit.TypeError, ClawID: "a", StatusCode: 0, TS: now})                                    // a note, not a request's end
	l.Event(&audit.Event{Type: audit.TypeError, ClawID: "a", StatusCode: 503, ErrorType: audit.ErrorTypeRetry, TS: now}) // a retry
	snap, _, _ := l.Snapshot()
	if got := snap["a"]; got.Requests != 3 || got.Errors != 2 || !got.Last.Equal(now) {
		t.Fatalf("%+v", got)
	}
	now = now.Add(5 * time.Minute)
	if snap, _, _ := l.Snapshot(); snap["a"].Requests != 0 {
		t.Fatalf("after the window: %+v", snap["a"])
	}
}

func TestEventsStreamUpdatesAndAuthenticated(t *testing.T) {
	r := newRig(t, nil)
	c := client()
	_, csrf := r.login(t, c, operatorToken)
	resp, err := c.Get(r.srv.URL + "/events")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%v %v", resp, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	next := func() liveUpdate {
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var u liveUpdate
				if err := json.Unmarshal([]byte(data), &u); err != nil {
					t.Fatal(err)
				}
				return u
			}
		}
		t.Fatal("stream ended")
		return liveUpdate{}
	}
	first := next()
	r.console.Live().Event(&audit.Event{Type: audit.TypeResponse, ClawID: "helper", StatusCode: 200, TS: time.Now()})
	for u := next(); ; u = next() {
		if u.Version > first.Version {
			if u.Agents["helper"].Requests != 1 {
				t.Fatalf("%+v", u)
			}
			break
		}
	}
	// The admin listener's authenticator: a session for reads, and the
	// CSRF token as a header for anything else.
	req, _ := http.NewRequest("GET", r.srv.URL+"/", nil)
	for _, ck := range c.Jar.Cookies(req.URL) {
		req.AddCookie(ck)
	}
	if !r.console.Authenticated(req) {
		t.Fatal("session not authenticated")
	}
	req.Method = "POST"
	if r.console.Authenticated(req) {
		t.Fatal("POST without the CSRF header authenticated")
	}
	req.Header.Set("X-CSRF-Token", csrf)
	if !r.console.Authenticated(req) {
		t.Fatal("POST with the CSRF header refused")
	}
}

// Seeding adds counts from history to the slots still in the window,
// beside what was counted live, and never over a later slot.
func TestLiveSeed(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	l := NewLive(func() time.Time { return now })
	l.Event(&audit.Event{Type: audit.TypeResponse, ClawID: "a", StatusCode: 200, TS: now})
	l.Seed([]histindex.SlotCount{
		{Agent: "a", Start: now.Add(-2 * time.Minute), Requests: 3, Errors: 1, Last: now.Add(-2*time.Minute + 4*time.Second)},
		{Agent: "a", Start: now.Add(-6 * time.Minute), Requests: 50, Errors: 50}, // out of the window
		{Agent: "a", Start: now.Add(-5 * time.Minute), Requests: 40, Errors: 40}, // its slot now holds a later time
		{Agent: "b", Start: now.Add(-30 * time.Second), Requests: 2, Last: now.Add(-25 * time.Second)},
	})
	snap, _, _ := l.Snapshot()
	if a := snap["a"]; a.Requests != 4 || a.Errors != 1 || !a.Last.Equal(now) {
		t.Fatalf("a: %+v, want 4 requests (3 seeded, 1 live), 1 error", a)
	}
	if b := snap["b"]; b.Requests != 2 || b.Errors != 0 || !b.Last.Equal(now.Add(-25*time.Second)) {
		t.Fatalf("b: %+v", b)
	}
}

// The console starts with the last five minutes of history in its
// counters (a restart does not zero them): exchanges only, native calls
// left out, and what happens next is counted on top.
func TestCountersSeededFromHistory(t *testing.T) {
	r := newRig(t, nil)
	c := client()
	r.login(t, c, operatorToken)
	// analyst: two turns 4 and 2 minutes ago, two within the last minute;
	// the older ones and trader's native call are not counted.
	snap, _, _ := r.console.Live().Snapshot()
	if a := snap["analyst"]; a.Requests != 4 || a.Errors != 0 {
		t.Fatalf("analyst seeded %+v, want 4 requests", a)
	}
	if tr := snap["trader"]; tr.Requests != 0 {
		t.Fatalf("trader seeded %+v, want none (its native call is no exchange, its turns are older)", tr)
	}
	r.console.Live().Event(&audit.Event{Type: audit.TypeResponse, ClawID: "analyst", StatusCode: 500, TS: time.Now()})
	_, home := get(t, c, r.srv.URL+"/")
	for _, want := range []string{`data-live-agent="analyst" data-live-field="requests">5<`, `data-live-agent="analyst" data-live-field="errors">1<`} {
		if !strings.Contains(home, want) {
			t.Fatalf("pod page: want %s in\n%s", want, home)
		}
	}
}
