package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadServersFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	const file = `{"mcpServers": {
		"trading-desk": {"type": "http", "url": "http://cllama:8080/mcp", "headers": {"Authorization": "Bearer tok"}},
		"another": {"url": "http://other:9000/mcp"}}}`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file wins over the environment.
	servers, err := loadServers(env(map[string]string{"CLAW_MCP_CONFIG": path, "CLAW_MCP_URL": "http://ignored/mcp"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 || servers[0].Name != "another" || servers[1].Name != "trading-desk" {
		t.Fatalf("servers = %+v, want another then trading-desk", servers)
	}
	if s := servers[1]; s.URL != "http://cllama:8080/mcp" || s.Headers["Authorization"] != "Bearer tok" {
		t.Errorf("trading-desk = %+v", s)
	}
	if s := servers[0]; s.URL != "http://other:9000/mcp" || len(s.Headers) != 0 {
		t.Errorf("another = %+v", s)
	}
}

func TestLoadServersFromEnv(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "mcp.json")
	servers, err := loadServers(env(map[string]string{"CLAW_MCP_CONFIG": absent, "CLAW_MCP_URL": "http://cllama:8080/mcp", "CLAW_MCP_TOKEN": "tok"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 1 || servers[0].URL != "http://cllama:8080/mcp" || servers[0].Headers["Authorization"] != "Bearer tok" {
		t.Errorf("servers = %+v", servers)
	}
	servers, err = loadServers(env(map[string]string{"CLAW_MCP_CONFIG": absent, "CLAW_MCP_URL": "http://cllama:8080/mcp"}))
	if err != nil || len(servers[0].Headers) != 0 {
		t.Errorf("without a token: %+v, %v; want no headers", servers, err)
	}
}

func TestLoadServersDefaultPath(t *testing.T) {
	if _, err := os.Stat(DefaultConfigPath); err == nil {
		t.Skipf("%s exists on this machine", DefaultConfigPath)
	}
	_, err := loadServers(env(nil))
	if err == nil || !strings.Contains(err.Error(), DefaultConfigPath) || !strings.Contains(err.Error(), "CLAW_MCP_URL") {
		t.Errorf("err = %v, want one naming %s and CLAW_MCP_URL", err, DefaultConfigPath)
	}
}

func TestLoadServersRejects(t *testing.T) {
	for name, file := range map[string]string{
		"not JSON":      `{"mcpServers":`,
		"no servers":    `{"mcpServers": {}}`,
		"no url":        `{"mcpServers": {"p": {"type": "http"}}}`,
		"stdio":         `{"mcpServers": {"p": {"command": "npx", "args": ["srv"]}}}`,
		"sse transport": `{"mcpServers": {"p": {"type": "sse", "url": "http://x/sse"}}}`,
	} {
		path := filepath.Join(t.TempDir(), "mcp.json")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := loadServers(env(map[string]string{"CLAW_MCP_CONFIG": path, "CLAW_MCP_URL": "http://fallback/mcp"})); err == nil {
			t.Errorf("%s: loaded %+v", name, s)
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	// A config path that is a directory is an error, not a reason to fall back.
	if _, err := loadServers(env(map[string]string{"CLAW_MCP_CONFIG": t.TempDir(), "CLAW_MCP_URL": "http://fallback/mcp"})); err == nil {
		t.Error("a directory as config fell back to the environment")
	}
}
