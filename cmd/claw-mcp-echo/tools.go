package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}
type echoOut struct {
	Text string `json:"text"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"first addend"`
	B float64 `json:"b" jsonschema:"second addend"`
}
type addOut struct {
	Sum float64 `json:"sum"`
}

type lookupIn struct {
	Symbol string `json:"symbol" jsonschema:"ticker symbol, e.g. ACME"`
}
type lookupOut struct {
	Symbol   string  `json:"symbol"`
	Name     string  `json:"name"`
	Price    float64 `json:"price"`
	Currency string  `json:"currency"`
}

type slowIn struct {
	Ms int `json:"ms" jsonschema:"milliseconds to sleep (at most 60000)"`
}

type addToolIn struct {
	Name string `json:"name" jsonschema:"name of the echo-like tool to add"`
}

// symbols is a fixed table so answers are deterministic across runs.
var symbols = map[string]lookupOut{
	"ACME": {Symbol: "ACME", Name: "Acme Corporation", Price: 123.45, Currency: "USD"},
	"GLOB": {Symbol: "GLOB", Name: "Globex Inc.", Price: 67.89, Currency: "USD"},
	"INIT": {Symbol: "INIT", Name: "Initech", Price: 4.2, Currency: "USD"},
}

func newServer(logger *log.Logger, stdout io.Writer, faults bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "claw-mcp-echo", Version: "0.1.0"}, nil)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}

	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the given text back.", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut(in), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Add two numbers.", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup_symbol", Description: "Look up a ticker symbol's name and last price.", Annotations: readOnly},
		func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
			s, ok := symbols[strings.ToUpper(in.Symbol)]
			if !ok {
				// A tool error (isError result), not a protocol error: the
				// model should see it and recover.
				return nil, lookupOut{}, fmt.Errorf("unknown symbol %q", in.Symbol)
			}
			return nil, s, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "slow", Description: "Sleep for ms milliseconds, then answer.", Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, echoOut, error) {
			d := min(time.Duration(in.Ms)*time.Millisecond, time.Minute)
			select {
			case <-time.After(d):
				return nil, echoOut{Text: fmt.Sprintf("slept %dms", in.Ms)}, nil
			case <-ctx.Done():
				return nil, echoOut{}, ctx.Err()
			}
		})
	srv.AddResource(&mcp.Resource{URI: "echo://about", Name: "about", MIMEType: "text/plain", Description: "What this server is."},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/plain", Text: "claw-mcp-echo: deterministic tools for tests"},
			}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}},
			}}, nil
		})
	if faults {
		addFaultTools(srv, logger, stdout)
	}
	return srv
}

// addFaultTools registers the tools that break the server on purpose.
func addFaultTools(srv *mcp.Server, logger *log.Logger, stdout io.Writer) {
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exit the process with status 3 in the middle of the call."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, echoOut, error) {
			logger.Printf("crashing mid-call as asked")
			os.Exit(3)
			return nil, echoOut{}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "garbage", Description: "Write a non-JSON line to stdout, then hang."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, echoOut, error) {
			logger.Printf("writing garbage to stdout as asked")
			fmt.Fprintln(stdout, "<html>garbage, not JSON-RPC</html>")
			<-ctx.Done()
			return nil, echoOut{}, ctx.Err()
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "add_tool", Description: "Add an echo-like tool with the given name (sends tools/list_changed)."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addToolIn) (*mcp.CallToolResult, echoOut, error) {
			mcp.AddTool(srv, &mcp.Tool{Name: in.Name, Description: "Echo added at run time."},
				func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
					return nil, echoOut(in), nil
				})
			return nil, echoOut{Text: "added " + in.Name}, nil
		})
}
