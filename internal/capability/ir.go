package capability

import (
	"encoding/json"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// Descriptor is one service's validated self-description (`claw.describe`).
type Descriptor struct {
	// Version is 1 (feeds, endpoints, skill, auth) or 2 (adds tools and mcp).
	Version     int
	Description string
	Tools       []Tool
	Feeds       []Feed
	// Skill is the path of the service's skill file, relative to the
	// descriptor (or inside the image for image-sourced descriptors). Empty
	// when the service has none.
	Skill     string
	Endpoints []Endpoint
	// Auth is how callers authenticate to the service; nil means none.
	Auth *Auth
	// MCP is set when the service is an MCP server (Streamable HTTP); its
	// tools are then called through MCP rather than plain HTTP.
	MCP *MCP
}

// Tool is one callable capability: the MCP-visible half (Name, Description,
// InputSchema, OutputSchema, Annotations) plus hidden execution metadata.
type Tool struct {
	// Name is the service-local name; the compiler namespaces it as
	// "<service>.<name>".
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  *manifest.Annotations
	// HTTP is the plain-HTTP execution; nil for tools reached through MCP.
	HTTP *HTTPCall
	// TimeoutMS overrides the per-tool timeout when > 0.
	TimeoutMS int
	Retry     *manifest.Retry
	// Endpoint, when set, is the MCP server this tool is called on instead
	// of the service's own endpoint (a CKP `mcp_source` with an https://
	// URI, spec 001).
	Endpoint *ToolEndpoint
	// RemoteName is the tool's name on its MCP server when it differs from
	// Name (CKP `mcp_source.tool_name`); empty means Name.
	RemoteName string
}

// ToolEndpoint is a Streamable HTTP MCP endpoint of one tool.
type ToolEndpoint struct {
	// BaseURL is scheme://host[:port], without a path.
	BaseURL string
	// Path starts with "/".
	Path string
}

// HTTPCall is a tool's hidden `http` block.
type HTTPCall struct {
	// Method is upper case: GET, POST, PUT, PATCH or DELETE.
	Method string
	// Path starts with "/" and may hold {placeholders}.
	Path string
	// Body is "json" or empty.
	Body string
	// BodyKey wraps the JSON body under this key when set.
	BodyKey string
}

// Feed is a live-data endpoint the service offers (spec 003).
type Feed struct {
	Name string
	Path string
	// TTL is seconds; DefaultFeedTTL when the descriptor gives none.
	TTL         int
	Description string
}

// Endpoint is operator documentation of one HTTP route (spec 000 §1). It is
// never used for tool calling.
type Endpoint struct {
	Method      string
	Path        string
	Description string
}

// Auth types.
const (
	AuthBearer = "bearer"
	AuthNone   = "none"
)

// Auth says how callers authenticate to the service. Env names the variable
// of the service's environment that holds the bearer token.
type Auth struct {
	Type string
	Env  string
}

// MCP transports.
const TransportStreamableHTTP = "streamable_http"

// DefaultMCPPath is the MCP endpoint path when a descriptor names none.
const DefaultMCPPath = "/mcp"

// MCP locates a service's MCP endpoint.
type MCP struct {
	Transport string
	Path      string
}

// HasTools reports whether the descriptor declares any tools; when it does,
// its endpoints are omitted from agents' views (spec 000 §1).
func (d *Descriptor) HasTools() bool { return d != nil && len(d.Tools) > 0 }

// Tool returns the tool named name, or nil.
func (d *Descriptor) Tool(name string) *Tool {
	for i := range d.Tools {
		if d.Tools[i].Name == name {
			return &d.Tools[i]
		}
	}
	return nil
}

// Feed returns the feed named name, or nil.
func (d *Descriptor) Feed(name string) *Feed {
	for i := range d.Feeds {
		if d.Feeds[i].Name == name {
			return &d.Feeds[i]
		}
	}
	return nil
}
