package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawdapus/clawgo/internal/termsafe"
)

// maxTools bounds a listing; more is almost certainly a broken server.
const maxTools = 10000

// listing is what initialize and tools/list returned.
type listing struct {
	ProtocolVersion string
	Server          *ServerInfo
	Tools           []Tool
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// listTools connects to the Streamable HTTP endpoint, initializes, pages
// through tools/list and closes the session.
func listTools(ctx context.Context, endpoint, token, clientVersion string) (*listing, error) {
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token: token, next: http.DefaultTransport}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "claw-discover", Version: clientVersion}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		// The server's words (a JSON-RPC error message), escaped.
		return nil, fmt.Errorf("MCP initialize at %s: %w", endpoint, termsafe.Error(err))
	}
	defer cs.Close()
	l := &listing{}
	if ir := cs.InitializeResult(); ir != nil {
		l.ProtocolVersion = ir.ProtocolVersion
		if ir.ServerInfo != nil {
			l.Server = &ServerInfo{Name: ir.ServerInfo.Name, Version: ir.ServerInfo.Version}
		}
	}
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("MCP tools/list: %w", termsafe.Error(err))
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			if seen[t.Name] {
				return nil, fmt.Errorf("MCP tools/list: tool %q is listed twice", t.Name)
			}
			seen[t.Name] = true
			tool, err := fromSDK(t)
			if err != nil {
				return nil, err
			}
			l.Tools = append(l.Tools, tool)
		}
		if len(l.Tools) > maxTools {
			return nil, fmt.Errorf("MCP tools/list: more than %d tools", maxTools)
		}
		if res.NextCursor == "" {
			return l, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

func fromSDK(t *mcp.Tool) (Tool, error) {
	out := Tool{Name: t.Name, Title: t.Title, Description: t.Description}
	var err error
	if out.InputSchema, err = rawSchema(t.InputSchema); err != nil {
		return out, fmt.Errorf("tool %q: inputSchema: %w", t.Name, err)
	}
	if t.OutputSchema != nil {
		if out.OutputSchema, err = rawSchema(t.OutputSchema); err != nil {
			return out, fmt.Errorf("tool %q: outputSchema: %w", t.Name, err)
		}
	}
	if a := t.Annotations; a != nil {
		out.Annotations = &Annotations{
			Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint,
		}
	}
	return out, nil
}

func rawSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	if r, ok := v.(json.RawMessage); ok {
		return r, nil
	}
	return json.Marshal(v)
}
