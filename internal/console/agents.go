package console

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/clawdapus/clawgo/internal/agentctx"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// AgentInfo is what the pages show of an agent's compiled context: never
// its token, a feed's URL or credential, or a service's address.
type AgentInfo struct {
	ID      string
	Service string
	Type    string
	Models  []string
	Tools   []ToolGrant
	Rules   []manifest.Rule
	Feeds   []FeedInfo
	// Problem says why part of the context could not be read.
	Problem string
}

// ToolGrant is one granted tool.
type ToolGrant struct {
	Name string
	Mode string
	When []string
}

// FeedInfo is one subscribed feed.
type FeedInfo struct {
	Name, Source, Path string
	TTL                int
}

// ToolsMode is "mediated", "native", "mediated+native" or "none".
func (a AgentInfo) ToolsMode() string {
	var med, nat bool
	for _, t := range a.Tools {
		if t.Mode == manifest.ModeNative {
			nat = true
		} else {
			med = true
		}
	}
	switch {
	case med && nat:
		return "mediated+native"
	case nat:
		return manifest.ModeNative
	case med:
		return manifest.ModeMediated
	}
	return "none"
}

// AgentSource lists the compiled agents.
type AgentSource interface {
	IDs() []string
	Agent(id string) (AgentInfo, bool)
}

type noAgents struct{}

func (noAgents) IDs() []string                  { return nil }
func (noAgents) Agent(string) (AgentInfo, bool) { return AgentInfo{}, false }

// maxAgents bounds the agents listed.
const maxAgents = 10_000

// ContextAgents reads agents from cllama's context root through its store.
func ContextAgents(root string, store *agentctx.Store) AgentSource {
	return contextAgents{root: root, store: store}
}

type contextAgents struct {
	root  string
	store *agentctx.Store
}

func (c contextAgents) IDs() []string {
	des, err := os.ReadDir(c.root)
	if err != nil {
		return nil
	}
	var out []string
	for _, de := range des {
		if len(out) == maxAgents {
			break
		}
		if de.IsDir() && manifest.ValidAgentID(de.Name()) {
			if _, err := os.Stat(filepath.Join(c.root, de.Name(), "metadata.json")); err == nil {
				out = append(out, de.Name())
			}
		}
	}
	sort.Strings(out)
	return out
}

func (c contextAgents) Agent(id string) (AgentInfo, bool) {
	if !manifest.ValidAgentID(id) {
		return AgentInfo{}, false
	}
	a, err := c.store.Get(id)
	if err != nil || a == nil {
		return AgentInfo{}, false
	}
	info := AgentInfo{ID: id, Service: a.Metadata.Service, Type: a.Metadata.Type, Models: a.Metadata.Models}
	if a.Tools != nil {
		for _, t := range a.Tools.Tools {
			mode := t.Mode
			if mode == "" {
				mode = manifest.ModeMediated
			}
			info.Tools = append(info.Tools, ToolGrant{Name: t.Name, Mode: mode, When: t.When})
		}
		info.Rules = a.Tools.Rules
	}
	for _, f := range a.Feeds {
		info.Feeds = append(info.Feeds, FeedInfo{Name: f.Name, Source: f.Source, Path: f.Path, TTL: f.TTL})
	}
	switch {
	case a.ToolsErr != nil:
		info.Problem = "tools.json: " + a.ToolsErr.Error()
	case a.FeedsErr != nil:
		info.Problem = "feeds.json: " + a.FeedsErr.Error()
	}
	return info, true
}
