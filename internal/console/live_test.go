package console

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
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
