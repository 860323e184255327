package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// DefaultConfigPath is where the compiler mounts the agent's MCP config.
const DefaultConfigPath = "/claw/mcp.json"

// envServerName names the one server built from CLAW_MCP_URL and
// CLAW_MCP_TOKEN when there is no config file.
const envServerName = "claw"

// server is one entry of the config: a Streamable HTTP endpoint and the
// headers every request to it carries.
type server struct {
	Name    string
	URL     string
	Headers map[string]string
}

// configFile is the mcpServers shape many MCP clients read:
//
//	{"mcpServers": {"<pod>": {"type": "http", "url": "http://cllama:8080/mcp",
//	  "headers": {"Authorization": "Bearer <token>"}}}}
type configFile struct {
	MCPServers map[string]struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
		Command string            `json:"command"`
	} `json:"mcpServers"`
}

// loadServers reads the servers from the file named by CLAW_MCP_CONFIG
// (default /claw/mcp.json). When that file does not exist it falls back to
// CLAW_MCP_URL, with CLAW_MCP_TOKEN as bearer. Servers come back sorted by
// name so that tool order, and so the requests, are the same every run.
func loadServers(getenv func(string) string) ([]server, error) {
	path := getenv("CLAW_MCP_CONFIG")
	if path == "" {
		path = DefaultConfigPath
	}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		return parseConfig(path, data)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("MCP config: %w", err)
	}
	url := getenv("CLAW_MCP_URL")
	if url == "" {
		return nil, fmt.Errorf("no MCP server configured: %s does not exist and CLAW_MCP_URL is not set", path)
	}
	s := server{Name: envServerName, URL: url, Headers: map[string]string{}}
	if token := getenv("CLAW_MCP_TOKEN"); token != "" {
		s.Headers["Authorization"] = "Bearer " + token
	}
	return []server{s}, nil
}

func parseConfig(path string, data []byte) ([]server, error) {
	var cf configFile
	if err := json.Unmarshal(data, &cf); err != nil {
		return nil, fmt.Errorf("MCP config %s: %w", path, err)
	}
	if len(cf.MCPServers) == 0 {
		return nil, fmt.Errorf("MCP config %s: mcpServers lists no server", path)
	}
	var out []server
	for name, e := range cf.MCPServers {
		switch {
		case e.Command != "":
			return nil, fmt.Errorf("MCP config %s: server %q is a stdio server; this runner speaks only Streamable HTTP", path, name)
		case e.Type != "" && e.Type != "http" && e.Type != "streamable-http":
			return nil, fmt.Errorf("MCP config %s: server %q has type %q; this runner speaks only http (Streamable HTTP)", path, name, e.Type)
		case e.URL == "":
			return nil, fmt.Errorf("MCP config %s: server %q has no url", path, name)
		}
		out = append(out, server{Name: name, URL: e.URL, Headers: e.Headers})
	}
	slices.SortFunc(out, func(a, b server) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
