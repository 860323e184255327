package toolexec

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

const benchSchema = `{"type":"object","properties":{"claw_id":{"type":"string"},"symbol":{"type":"string","pattern":"^[A-Z]{1,5}$"},"side":{"enum":["buy","sell"]},"quantity":{"type":"number","exclusiveMinimum":0},"tags":{"type":"array","items":{"type":"string"}}},"required":["symbol","side","quantity"],"additionalProperties":false}`

const benchArgs = `{"symbol":"AAPL","side":"buy","quantity":10,"tags":["a","b"]}`

func benchService(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"t-1","status":"filled","price":187.12}`)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkHTTPCall is a whole managed call against a loopback service
// that answers at once; compare with BenchmarkHTTPBaseline (the same
// request made with a bare http.Client) for the executor's own cost.
func BenchmarkHTTPCall(b *testing.B) {
	srv := benchService(b)
	e := New(Options{})
	defer e.Close()
	tool := httpTool(srv.URL, "POST", "/api/v1/trades/{claw_id}", benchSchema)
	c := Call{AgentID: "analyst-0", Tool: tool, Arguments: json.RawMessage(benchArgs), Timeout: 5 * time.Second, MaxResultBytes: 16384}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if env := e.Run(ctx, c); !env.OK {
			b.Fatal(mustJSON(env))
		}
	}
}

func BenchmarkHTTPBaseline(b *testing.B) {
	srv := benchService(b)
	client := &http.Client{Transport: New(Options{}).opts.Transport}
	body := `{"claw_id":"analyst-0","quantity":10,"side":"buy","symbol":"AAPL","tags":["a","b"]}`
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/trades/analyst-0", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkPrepare is everything before the network: decode, claw_id,
// cached-schema validation and request rendering.
func BenchmarkPrepare(b *testing.B) {
	e := New(Options{})
	defer e.Close()
	tool := httpTool("http://svc:4000", "POST", "/api/v1/trades/{claw_id}", benchSchema)
	c := Call{AgentID: "analyst-0", Tool: tool}
	b.ReportAllocs()
	for b.Loop() {
		args, err := decodeArguments(json.RawMessage(benchArgs))
		if err != nil {
			b.Fatal(err)
		}
		in := e.schemas.get(tool.InputSchema)
		forceClawID(args, c.AgentID, in.declaresClawID)
		if err := in.sch.Validate(map[string]any(args)); err != nil {
			b.Fatal(err)
		}
		if _, err := e.prepareHTTP(c, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchemaValidation is the validation alone, on a cached schema.
func BenchmarkSchemaValidation(b *testing.B) {
	cache := newSchemaCache(16)
	raw := json.RawMessage(benchSchema)
	args, _ := decodeArguments(json.RawMessage(benchArgs))
	b.ReportAllocs()
	for b.Loop() {
		if err := cache.get(raw).sch.Validate(map[string]any(args)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSchemaCompile is the one-time cost a new schema pays.
func BenchmarkSchemaCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := compileSchema(json.RawMessage(benchSchema)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBoundTruncate cuts a 100 KB JSON answer to the default 16 KiB.
func BenchmarkBoundTruncate(b *testing.B) {
	canon, _ := jsontop.Canonical([]byte(`{"rows":[` + strings.Repeat(`{"name":"row","v":"<&>"},`, 4000) + `{}]}`))
	b.SetBytes(int64(len(canon)))
	b.ReportAllocs()
	for b.Loop() {
		if env := bound(result{json: canon}, 16384); !env.Truncated {
			b.Fatal("not truncated")
		}
	}
}

// BenchmarkMCPCall is a managed call over a reused MCP session to the
// SDK's own server on loopback.
func BenchmarkMCPCall(b *testing.B) {
	t := &testing.T{}
	svc := newMCPServiceForBench(b, t)
	e := New(Options{})
	defer e.Close()
	c := Call{AgentID: "analyst-0", Tool: mcpTool(svc.URL, "quote"), Arguments: json.RawMessage(`{"symbol":"AAPL"}`), Timeout: 5 * time.Second, MaxResultBytes: 16384}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if env := e.Run(ctx, c); !env.OK {
			b.Fatal(mustJSON(env))
		}
	}
}

func newMCPServiceForBench(b *testing.B, _ *testing.T) *mcpService {
	s := &mcpService{}
	s.restart()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*s.handler.Load()).ServeHTTP(w, r)
	}))
	b.Cleanup(s.Close)
	return s
}
