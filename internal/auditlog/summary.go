package auditlog

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clawdapus/clawgo/internal/audit"
)

// Types are the event types cllama emits, for validating --type.
var Types = []string{audit.TypeRequest, audit.TypeResponse, audit.TypeError, audit.TypeToolCall, audit.TypeFeedFetch, audit.TypeManifestError,
	audit.TypeFileRepaired, audit.TypeResultStored, audit.TypeResultRead, audit.TypeFallback, audit.TypeApprovalRequested, audit.TypeApprovalDecided,
	audit.TypeConsoleLogin}

// Filter selects records. The zero value selects everything.
type Filter struct {
	// Since drops records before it (zero: keep all).
	Since time.Time `json:"since,omitzero"`
	// Agents keeps only these claw ids (empty: all).
	Agents []string `json:"claw,omitempty"`
	// Types keeps only these event types (empty: all).
	Types []string `json:"types,omitempty"`
}

// Validate checks the types against Types.
func (f Filter) Validate() error {
	for _, t := range f.Types {
		if !slices.Contains(Types, t) {
			return fmt.Errorf("unknown event type %q (known: %s)", t, strings.Join(Types, ", "))
		}
	}
	return nil
}

// Keep reports whether r passes the filter.
func (f Filter) Keep(r *Record) bool {
	if !f.Since.IsZero() && r.TS.Before(f.Since) {
		return false
	}
	if len(f.Agents) > 0 && !slices.Contains(f.Agents, r.ClawID) {
		return false
	}
	if len(f.Types) > 0 && !slices.Contains(f.Types, r.Type) {
		return false
	}
	return true
}

// Apply returns the records that pass the filter, in order.
func (f Filter) Apply(rs []Record) []Record {
	out := make([]Record, 0, len(rs))
	for i := range rs {
		if f.Keep(&rs[i]) {
			out = append(out, rs[i])
		}
	}
	return out
}

// AgentSummary counts one agent's activity. Tokens are summed over
// response and error events (the runner's bill: a mediated exchange's
// tokens cover every hidden round).
type AgentSummary struct {
	Agent       string `json:"agent"`
	Requests    int    `json:"requests"`
	Responses   int    `json:"responses"`
	Errors      int    `json:"errors"`
	ToolCalls   int    `json:"tool_calls"`
	ToolErrors  int    `json:"tool_errors"`
	FeedFetches int    `json:"feed_fetches"`
	TokensIn    int    `json:"tokens_in"`
	TokensOut   int    `json:"tokens_out"`
	// CostUSD sums the costed exchanges (cost_usd); Unpriced counts those
	// whose model had no price.
	CostUSD  audit.Cost `json:"cost_usd,omitzero"`
	Unpriced int        `json:"unpriced,omitempty"`
	Models   []string   `json:"models"`
}

// Summary is the per-agent table and its totals, and the tool calls
// counted per agent and tool.
type Summary struct {
	Agents []AgentSummary `json:"agents"`
	Total  AgentSummary   `json:"total"`
	Tools  []ToolSummary  `json:"tools"`
}

// ToolSummary counts one agent's calls of one tool.
type ToolSummary struct {
	Agent string `json:"agent"`
	Tool  string `json:"tool"`
	// Mode is "mediated" or "native" (calls of one tool in both modes,
	// across a recompile, are counted in two rows).
	Mode   string `json:"mode"`
	Effect string `json:"effect,omitempty"`
	Calls  int    `json:"calls"`
	Errors int    `json:"errors"`
	// LatencyMSTotal and LatencyMSMax are over the calls that report one.
	LatencyMSTotal int64 `json:"latency_ms_total"`
	LatencyMSMax   int64 `json:"latency_ms_max"`
}

// NoAgent labels events without a claw id (a manifest that failed to load,
// a request refused before identity was known).
const NoAgent = "(none)"

// Summarize counts rs per agent, agents sorted by id. A file_repaired
// event is no agent's activity: it is left out.
func Summarize(rs []Record) Summary {
	by := map[string]*AgentSummary{}
	models := map[string]map[string]bool{}
	total := AgentSummary{Agent: "TOTAL"}
	allModels := map[string]bool{}
	for i := range rs {
		r := &rs[i]
		if r.Type == audit.TypeFileRepaired {
			continue
		}
		id := r.ClawID
		if id == "" {
			id = NoAgent
		}
		s := by[id]
		if s == nil {
			s = &AgentSummary{Agent: id}
			by[id] = s
			models[id] = map[string]bool{}
		}
		for _, t := range []*AgentSummary{s, &total} {
			switch r.Type {
			case audit.TypeRequest:
				t.Requests++
			case audit.TypeResponse:
				t.Responses++
			case audit.TypeError, audit.TypeManifestError:
				t.Errors++
			case audit.TypeToolCall:
				t.ToolCalls++
				if r.IsToolError() {
					t.ToolErrors++
				}
			case audit.TypeFeedFetch:
				t.FeedFetches++
			}
			if r.Type == audit.TypeResponse || r.Type == audit.TypeError {
				if r.TokensIn != nil {
					t.TokensIn += *r.TokensIn
				}
				if r.TokensOut != nil {
					t.TokensOut += *r.TokensOut
				}
				if r.CostUSD.Known {
					t.CostUSD = audit.KnownCost(t.CostUSD.MicroUSD + r.CostUSD.MicroUSD)
				}
				if r.CostUnknown {
					t.Unpriced++
				}
			}
		}
		if r.Model != "" && r.Type != audit.TypeFeedFetch {
			models[id][r.Model] = true
			allModels[r.Model] = true
		}
	}
	var sum Summary
	sum.Tools = summarizeTools(rs)
	ids := make([]string, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		s := by[id]
		s.Models = sortedSet(models[id])
		sum.Agents = append(sum.Agents, *s)
	}
	if sum.Agents == nil {
		sum.Agents = []AgentSummary{}
	}
	total.Models = sortedSet(allModels)
	sum.Total = total
	return sum
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// summarizeTools counts tool calls per agent and tool, sorted by agent
// then tool.
func summarizeTools(rs []Record) []ToolSummary {
	type key struct{ agent, tool, mode string }
	by := map[key]*ToolSummary{}
	for i := range rs {
		r := &rs[i]
		if r.Type != audit.TypeToolCall {
			continue
		}
		id := r.ClawID
		if id == "" {
			id = NoAgent
		}
		k := key{id, r.Tool, r.CallMode()}
		t := by[k]
		if t == nil {
			t = &ToolSummary{Agent: id, Tool: r.Tool, Mode: k.mode}
			by[k] = t
		}
		t.Calls++
		if r.IsToolError() {
			t.Errors++
		}
		if r.Effect != "" {
			t.Effect = r.Effect
		}
		if r.LatencyMS != nil {
			t.LatencyMSTotal += *r.LatencyMS
			t.LatencyMSMax = max(t.LatencyMSMax, *r.LatencyMS)
		}
	}
	out := make([]ToolSummary, 0, len(by))
	for _, t := range by {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		if out[i].Tool != out[j].Tool {
			return out[i].Tool < out[j].Tool
		}
		return out[i].Mode < out[j].Mode
	})
	return out
}
