package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ParseToolsSnapshot decodes a baked MCP `tools/list` snapshot
// (`.claw-tools.json`, spec 000 §1) into a version-2 descriptor whose tools
// are reached through the service's MCP endpoint. It accepts the result
// object ({"tools":[...]}), a bare array of tools, or a whole JSON-RPC
// response ({"result":{"tools":[...]}}).
func ParseToolsSnapshot(data []byte) (*Descriptor, error) {
	if len(data) > MaxDescriptorBytes {
		return nil, fmt.Errorf("snapshot is %d bytes; the limit is %d", len(data), MaxDescriptorBytes)
	}
	trimmed := bytes.TrimSpace(data)
	var tools []wireTool
	var mcp *wireMCP
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		if err := json.Unmarshal(data, &tools); err != nil {
			return nil, fmt.Errorf("not a valid tools/list snapshot: %s", JSONError(data, err))
		}
	default:
		var obj struct {
			Tools  []wireTool `json:"tools"`
			MCP    *wireMCP   `json:"mcp"`
			Result *struct {
				Tools []wireTool `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("not a valid tools/list snapshot: %s", JSONError(data, err))
		}
		tools, mcp = obj.Tools, obj.MCP
		if obj.Result != nil && tools == nil {
			tools = obj.Result.Tools
		}
		if tools == nil {
			return nil, fieldErr("tools", `required; a snapshot holds the "tools" array of an MCP tools/list result`)
		}
	}
	d := &Descriptor{Version: 2, MCP: &MCP{Transport: TransportStreamableHTTP, Path: DefaultMCPPath}}
	if mcp != nil {
		m, err := decodeMCP(mcp)
		if err != nil {
			return nil, err
		}
		d.MCP = m
	}
	for i := range tools {
		tools[i].HTTP = nil // MCP snapshots carry no HTTP execution
	}
	var err error
	if d.Tools, err = decodeTools(tools, true); err != nil {
		return nil, err
	}
	return d, nil
}
