package main

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxToolName is the longest function name OpenAI accepts; names must
// match ^[a-zA-Z0-9_-]{1,64}$.
const maxToolName = 64

// modelName maps an MCP tool name to a function name the model API
// accepts. cllama's pod tools have canonical names "<service>.<tool>",
// and a dot is not allowed, so:
//
//  1. the first "." (between service and tool) becomes "__";
//  2. every other character outside [a-zA-Z0-9_-] becomes "_";
//  3. a result longer than 64 characters is cut to 53 and "_" plus the
//     first 10 hex digits of SHA-256(name) are appended.
//
// "trading-api.get_market_context" becomes "trading-api__get_market_context",
// the same alias cllama presents for a mediated tool. The mapping is not
// one-to-one ("a.b.c" and "a.b_c" both become "a__b_c"), so names are
// assigned through a toolNames, which keeps them distinct and maps them back.
func modelName(name string) string {
	var b strings.Builder
	service, tool, found := strings.Cut(name, ".")
	sanitise(&b, service)
	if found {
		b.WriteString("__")
		sanitise(&b, tool)
	}
	s := b.String()
	if s == "" {
		s = "_"
	}
	if len(s) > maxToolName {
		s = hashed(s, name)
	}
	return s
}

// hashed cuts readable to fit and appends a digest of key.
func hashed(readable, key string) string {
	sum := sha256.Sum256([]byte(key))
	suffix := "_" + hex.EncodeToString(sum[:5])
	if len(readable) > maxToolName-len(suffix) {
		readable = readable[:maxToolName-len(suffix)]
	}
	return readable + suffix
}

func sanitise(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
}

// toolNames assigns model-facing names to MCP tools and maps them back.
// Names reserved up front (the runner's own save_note) are never given to
// an MCP tool. A tool whose modelName is taken gets a hashed name instead,
// keyed on its server and name, so every (server, tool) pair has its own
// model name.
type toolNames struct {
	taken map[string]bool
	back  map[string]toolRef
}

// toolRef is where a model-facing name leads: a tool on a server.
type toolRef struct {
	Server string
	Name   string
}

func newToolNames(reserved ...string) *toolNames {
	n := &toolNames{taken: map[string]bool{}, back: map[string]toolRef{}}
	for _, r := range reserved {
		n.taken[r] = true
	}
	return n
}

// assign returns the model-facing name of server's tool name.
func (n *toolNames) assign(server, name string) string {
	alias := modelName(name)
	for salt := ""; n.taken[alias]; salt += "+" {
		alias = hashed(modelName(name), salt+server+"\x00"+name)
	}
	n.taken[alias] = true
	n.back[alias] = toolRef{Server: server, Name: name}
	return alias
}

// lookup maps a model-facing name back to its MCP tool.
func (n *toolNames) lookup(alias string) (toolRef, bool) {
	ref, ok := n.back[alias]
	return ref, ok
}
