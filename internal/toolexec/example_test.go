package toolexec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

func ExampleExecutor_Run() {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"path":"`+r.URL.RawPath+r.URL.Path+`","agent":"`+r.Header.Get("X-Claw-ID")+`"}`)
	}))
	defer svc.Close()

	tool := &manifest.Tool{
		Name:        "trading-api.get_market_context",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"claw_id":{"type":"string"}},"required":["claw_id"]}`),
		Execution: manifest.Execution{
			Transport: "http", Service: "trading-api", BaseURL: svc.URL,
			Method: "GET", Path: "/api/v1/market_context/{claw_id}",
		},
	}
	exec := toolexec.New(toolexec.Options{})
	defer exec.Close()

	// The model asks for someone else's context; claw_id is the caller's.
	env := exec.Run(context.Background(), toolexec.Call{
		AgentID:        "analyst-0",
		Tool:           tool,
		Arguments:      json.RawMessage(`{"claw_id":"executor-1"}`),
		Timeout:        30 * time.Second,
		MaxResultBytes: manifest.DefaultMaxToolResultBytes,
	})
	out, _ := json.Marshal(env)
	fmt.Println(string(out))

	// A schema violation never reaches the service.
	tool.InputSchema = json.RawMessage(`{"type":"object","properties":{"days":{"type":"integer"}},"required":["days"]}`)
	env = exec.Run(context.Background(), toolexec.Call{AgentID: "analyst-0", Tool: tool, Arguments: json.RawMessage(`{"days":"seven"}`)})
	out, _ = json.Marshal(env)
	fmt.Println(string(out))
	// Output:
	// {"ok":true,"data":{"path":"/api/v1/market_context/analyst-0","agent":"analyst-0"}}
	// {"ok":false,"error":{"code":"invalid_arguments","message":"invalid arguments: /days: got string, want integer","rpc_code":-32602}}
}
