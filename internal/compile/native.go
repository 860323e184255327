package compile

import (
	"fmt"
	"path"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// Native tools: cllama serves an agent's native tools on its MCP endpoint
// (Streamable HTTP), where the agent's runner lists and calls them with
// the agent's own token. compile tells the runner where, two ways: an MCP
// client configuration file mounted at AgentMCPConfig, and the
// environment EnvMCPURL / EnvMCPToken. Agents without native tools get
// neither.
const (
	// CllamaMCPPath is cllama's MCP endpoint.
	CllamaMCPPath = "/mcp"
	// MCPConfigName is the MCP client configuration's file name, under
	// RunnerDir/<agent-id>/.
	MCPConfigName = "mcp.json"
	// EnvMCPURL and EnvMCPToken are the endpoint and the agent's token.
	EnvMCPURL   = "CLAW_MCP_URL"
	EnvMCPToken = "CLAW_MCP_TOKEN"
)

// MCPURL is cllama's MCP endpoint as agents reach it.
func MCPURL() string {
	return fmt.Sprintf("http://%s:%d%s", CllamaService, CllamaPort, CllamaMCPPath)
}

// MCPConfigPath is where compile writes agent id's MCP client
// configuration, relative to the pod directory.
func MCPConfigPath(id string) string { return path.Join(RunnerDir, id, MCPConfigName) }

// MCPConfig is the MCP client configuration in the "mcpServers" shape most
// runners read: one server, named after the pod.
type MCPConfig struct {
	MCPServers map[string]MCPServer `json:"mcpServers"`
}

// MCPServer is one MCP server a runner connects to.
type MCPServer struct {
	// Type is "http": MCP Streamable HTTP.
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// mcpConfig is agent a's MCP client configuration file.
func (b *builder) mcpConfig(a *Agent) ([]byte, error) {
	c := MCPConfig{MCPServers: map[string]MCPServer{b.pod.Name: {
		Type:    "http",
		URL:     MCPURL(),
		Headers: map[string]string{"Authorization": "Bearer " + a.Token},
	}}}
	return manifest.MarshalIndentJSON(c)
}

// NativeEnv is the environment pointing agent a's runner at its native
// tools; nil when it has none.
func NativeEnv(a *Agent) map[string]string {
	if !a.Cllama || !a.HasNative() {
		return nil
	}
	return map[string]string{EnvMCPURL: MCPURL(), EnvMCPToken: a.Token}
}
