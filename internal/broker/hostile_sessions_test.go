package broker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/clawdapus/clawgo/internal/toolexec"
)

// Opening a session is one step with making room for it: however many
// initialize requests one agent sends at once, it never holds more than
// its bound of sessions.
func TestHostileConcurrentInitializeKeepsTheSessionCap(t *testing.T) {
	const limit, clients = 16, 64
	b := New(Options{MaxSessionsPerAgent: limit, Runner: runnerFunc(func(context.Context, toolexec.Call) toolexec.Envelope {
		return toolexec.Envelope{OK: true, Data: json.RawMessage(`1`)}
	})})
	defer b.Close()
	a := agentWith("svc.one")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { b.ServeAgent(w, r, a) }))
	defer srv.Close()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	start := make(chan struct{})
	var wg sync.WaitGroup
	opened := make(chan string, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer a:x")
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				opened <- res.Header.Get("Mcp-Session-Id")
			}
		}()
	}
	close(start)
	wg.Wait()
	close(opened)
	n := 0
	for range opened {
		n++
	}
	if n < limit {
		t.Fatalf("only %d of %d initialize requests opened a session", n, clients)
	}
	if got := b.Sessions(a.ID); got > limit {
		t.Fatalf("%d sessions open after %d concurrent initialize requests, want at most %d (CLLAMA_MCP_MAX_SESSIONS)", got, clients, limit)
	}
}
