package mcpstdio

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

func post(t *testing.T, url, token string, body io.Reader, contentLength int64) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = contentLength
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestAuthTokenRequired(t *testing.T) {
	cfg := fastConfig()
	cfg.AuthToken = "s3cret"
	tw := startWrapper(t, cfg)

	for name, tok := range map[string]string{"missing": "", "wrong": "s3cre", "longer": "s3cret-and-more"} {
		resp := post(t, tw.URL+"/mcp", tok, strings.NewReader(initializeBody), int64(len(initializeBody)))
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s token: status %d", name, resp.StatusCode)
		}
	}
	if _, err := dial(tw, "wrong", nil); err == nil {
		t.Error("SDK client connected with a wrong token")
	}
	cs := connect(t, tw, "s3cret", nil)
	if _, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil {
		t.Fatal(err)
	}
	// Health stays open for container health checks.
	tw.waitStatus(t, StatusUp)
}

func TestHealthzReportsChildState(t *testing.T) {
	tw := startWrapper(t, fastConfig())
	h := tw.waitStatus(t, StatusUp)
	if h.PID == 0 || h.Tools != 4 || h.Server != "claw-mcp-echo 0.1.0" || h.UpSince == nil {
		t.Fatalf("health = %+v", h)
	}

	cfg := fastConfig("-exit-at-start", "7")
	down := startWrapper(t, cfg)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if h = down.health(t); h.LastExit != "" && h.Restarts > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(down.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("healthz of a failing child: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(h.LastExit+h.LastError, "status 7") {
		t.Fatalf("exit status not reported: %+v", h)
	}
}

func TestBodyLimit(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxBodyBytes = 1024
	tw := startWrapper(t, cfg)
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4096) + `"}}`

	// Declared length: refused before reading.
	if resp := post(t, tw.URL+"/mcp", "", strings.NewReader(big), int64(len(big))); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("declared oversize body: status %d", resp.StatusCode)
	}
	// Chunked (no length): cut off while reading.
	chunked := io.MultiReader(bytes.NewReader([]byte(big)))
	if resp := post(t, tw.URL+"/mcp", "", chunked, -1); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversize body: status %d", resp.StatusCode)
	}
	// A normal session still works under the limit.
	cs := connect(t, tw, "", nil)
	if err := cs.Ping(callCtx(t), nil); err != nil {
		t.Fatal(err)
	}
}

func TestRequestsWaitForFirstListing(t *testing.T) {
	// A client that connects the moment the wrapper starts (as `claw
	// discover` does) must see the tools, not an empty list.
	tw := startWrapper(t, fastConfig())
	cs := connect(t, tw, "", nil)
	res, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 4 {
		t.Fatalf("first list has %d tools", len(res.Tools))
	}
}
