package discover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/clawdapus/clawgo/internal/capability"
	"github.com/clawdapus/clawgo/internal/durable"
)

// Dir is where snapshots live, relative to the pod directory.
const Dir = ".claw-discovered"

// SnapshotPath is a service's snapshot, relative to the pod directory.
func SnapshotPath(service string) string {
	return filepath.Join(Dir, service+".claw-describe.json")
}

// Snapshot is the descriptor `claw discover` writes: claw.describe version
// 2 (spec 000 §1) with an MCP endpoint, the listed tools, and discovery
// metadata that compile compares against the pod to warn about drift.
type Snapshot struct {
	Version   int           `json:"version"`
	MCP       SnapshotMCP   `json:"mcp"`
	Tools     []Tool        `json:"tools"`
	Discovery DiscoveryMeta `json:"discovery"`
}

// SnapshotMCP is the descriptor's mcp block.
type SnapshotMCP struct {
	Transport string `json:"transport"`
	Path      string `json:"path"`
}

// Tool is one listed tool in MCP's vocabulary.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

// Annotations are the MCP tool annotation hints as the server gave them.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// DiscoveryMeta records how and from what the snapshot was taken. Command,
// Args and Image are what compile compares with the pod.
type DiscoveryMeta struct {
	Service string   `json:"service"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	// Image is the service's image (also in local mode, so a later image
	// change is noticed).
	Image string `json:"image,omitempty"`
	// Mode is "container" or "local".
	Mode            string `json:"mode"`
	ProtocolVersion string `json:"protocol_version"`
	// Server is the MCP server that answered (the wrapper); WrappedServer
	// is the stdio server behind it as the wrapper reports it.
	Server        *ServerInfo `json:"server,omitempty"`
	WrappedServer string      `json:"wrapped_server,omitempty"`
	DiscoveredAt  string      `json:"discovered_at"`
	ToolCount     int         `json:"tool_count"`
}

// ServerInfo is the MCP server's self-reported name and version.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Render returns the snapshot as indented JSON with a trailing newline:
// tools sorted by name, schema keys sorted, so one server gives the same
// bytes apart from discovered_at. It checks that the result loads as a
// descriptor, so a server with an unusable schema fails here, not later in
// compile.
func (s *Snapshot) Render() ([]byte, error) {
	c := *s
	c.Tools = append([]Tool(nil), s.Tools...)
	sort.Slice(c.Tools, func(i, j int) bool { return c.Tools[i].Name < c.Tools[j].Name })
	for i := range c.Tools {
		var err error
		if c.Tools[i].InputSchema, err = canonicalJSON(c.Tools[i].InputSchema); err != nil {
			return nil, fmt.Errorf("tool %q: inputSchema: %w", c.Tools[i].Name, err)
		}
		if len(c.Tools[i].OutputSchema) > 0 {
			if c.Tools[i].OutputSchema, err = canonicalJSON(c.Tools[i].OutputSchema); err != nil {
				return nil, fmt.Errorf("tool %q: outputSchema: %w", c.Tools[i].Name, err)
			}
		}
	}
	c.Discovery.ToolCount = len(c.Tools)
	if c.Discovery.Args == nil {
		c.Discovery.Args = []string{}
	}
	if c.Tools == nil {
		c.Tools = []Tool{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&c); err != nil {
		return nil, err
	}
	if _, err := capability.ParseDescriptor(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("the server's tools do not form a valid descriptor: %w", err)
	}
	return buf.Bytes(), nil
}

// canonicalJSON re-encodes raw with object keys sorted; JSON null or
// nothing becomes an empty object schema.
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Write puts data at dir/.claw-discovered/<service>.claw-describe.json
// atomically and durably (durable.Replace) and returns the path relative
// to dir.
func Write(dir, service string, data []byte) (string, error) {
	rel := SnapshotPath(service)
	full := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return "", err
	}
	if err := durable.Replace(full, "."+service+".tmp", 0o644, data); err != nil {
		return "", err
	}
	return rel, nil
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
