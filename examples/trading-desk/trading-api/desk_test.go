package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestDeskEnforcesBearerAndRecords(t *testing.T) {
	d := newDesk("secret", func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) })
	srv := httptest.NewServer(d.routes())
	defer srv.Close()

	do := func(method, path, token, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("X-Claw-ID", "executor")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := do("POST", "/api/v1/trades", "wrong", `{"symbol":"AAPL","side":"buy","quantity":5}`); r.StatusCode != 401 {
		t.Fatalf("wrong token: %d", r.StatusCode)
	}
	if r := do("POST", "/api/v1/trades", "secret", `{"symbol":"AAPL","side":"buy","quantity":5}`); r.StatusCode != 201 {
		t.Fatalf("trade: %d", r.StatusCode)
	}
	if r := do("POST", "/api/v1/trades", "secret", `{"symbol":"AAPL","side":"buy","quantity":500}`); r.StatusCode != 422 {
		t.Fatalf("oversized trade: %d", r.StatusCode)
	}
	resp, err := http.Get(srv.URL + "/api/v1/received")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Received []Received
		Trades   []Trade
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Received) != 3 || got.Received[0].Authorized || !got.Received[1].Authorized {
		t.Fatalf("received = %+v", got.Received)
	}
	if len(got.Trades) != 1 || got.Trades[0].ClawID != "executor" || got.Trades[0].Symbol != "AAPL" {
		t.Fatalf("trades = %+v", got.Trades)
	}
}

func TestMarketSummaryHasFrontmatter(t *testing.T) {
	d := newDesk("s", time.Now)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/v1/market-summary", nil)
	req.Header.Set("Authorization", "Bearer s")
	d.routes().ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), "---\nfeed: market-summary\n") {
		t.Fatalf("%d %q", rec.Code, rec.Body.String())
	}
}
