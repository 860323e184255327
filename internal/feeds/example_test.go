package feeds_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/audit"
	"github.com/clawdapus/clawgo/internal/exchange"
	"github.com/clawdapus/clawgo/internal/feeds"
	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/recorder"
	"github.com/clawdapus/clawgo/internal/wire/anthropic"
)

// cllama builds one Decorator at start-up and hands it to the proxy, which
// calls Decorate on every exchange before passthrough or mediation.
func Example() {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "---\nrefreshed: 2026-03-19T14:32:00Z\nttl: 30\n---\nFleet nominal. 7 agents healthy. No alerts.\n")
	}))
	defer svc.Close()

	d := feeds.New(feeds.Options{
		Recorder: recorder.New(audit.New(io.Discard), nil), // cllama passes its one recorder
		Timeout:  2 * time.Second,
	})
	agent := &agentctx.Agent{ID: "octopus", Feeds: []manifest.Feed{
		{Name: "fleet-alerts", Source: "claw-api", Path: "/fleet/alerts", TTL: 30, URL: svc.URL + "/fleet/alerts"},
	}}
	x := &exchange.Exchange{
		Agent:  agent,
		Pod:    "trading-desk",
		Format: anthropic.Name,
		Body:   []byte(`{"model":"claude-sonnet-4","system":"You are the master claw.","messages":[{"role":"user","content":"status?"}],"max_tokens":256}`),
	}
	if err := d.Decorate(context.Background(), x); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	// Show the body with the (long) preface shortened.
	out := string(x.Body)
	i := strings.Index(out, `{"type":"text","text":"Context feeds:`)
	j := strings.Index(out, `\n\n--- BEGIN FEED`)
	fmt.Println(out[:i] + `{"type":"text","text":"Context feeds: …` + out[j:])
	// Output:
	// {"model":"claude-sonnet-4","system":[{"type":"text","text":"You are the master claw."},{"type":"text","text":"Context feeds: …\n\n--- BEGIN FEED: fleet-alerts (from claw-api, refreshed 2026-03-19T14:32:00Z) ---\nFleet nominal. 7 agents healthy. No alerts.\n--- END FEED: fleet-alerts ---"}],"messages":[{"role":"user","content":"status?"}],"max_tokens":256}
}
