package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteText writes the report for a terminal: services first (what each
// offers, to whom), then agents (what each may call and read, and why).
func (r *Report) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "pod %s (%s)\n", r.Pod, r.File)
	for _, s := range r.Services {
		writeService(b, s)
	}
	for _, a := range r.Agents {
		writeAgent(b, a)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, wn := range r.Warnings {
			fmt.Fprintf(b, "  %s\n", wn)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeService(b *strings.Builder, s Service) {
	fmt.Fprintf(b, "\nservice %s\n", s.Name)
	if len(s.ReachedBy) == 0 {
		b.WriteString("  reached by: no agent, not cllama\n")
	} else {
		fmt.Fprintf(b, "  reached by: %s\n", strings.Join(s.ReachedBy, ", "))
	}
	if s.MCPStdio != nil {
		fmt.Fprintf(b, "  stdio MCP server: %s\n", strings.Join(append([]string{s.MCPStdio.Command}, s.MCPStdio.Args...), " "))
	}
	if s.Descriptor == nil {
		b.WriteString("  descriptor: none\n")
		return
	}
	fmt.Fprintf(b, "  descriptor: %s, version %d\n", s.Descriptor, s.Version)
	if s.Description != "" {
		fmt.Fprintf(b, "  description: %s\n", s.Description)
	}
	if s.Auth != nil {
		if s.Auth.Env != "" {
			fmt.Fprintf(b, "  auth: %s token from %s\n", s.Auth.Type, s.Auth.Env)
		} else {
			fmt.Fprintf(b, "  auth: %s\n", s.Auth.Type)
		}
	}
	if s.MCP != "" {
		fmt.Fprintf(b, "  mcp endpoint: %s\n", s.MCP)
	}
	if len(s.Tools) == 0 {
		b.WriteString("  tools: none\n")
	} else {
		fmt.Fprintf(b, "  tools (%d):\n", len(s.Tools))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, t := range s.Tools {
			to := "granted to: " + strings.Join(t.GrantedTo, ", ")
			if len(t.GrantedTo) == 0 {
				to = "granted to: nobody"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", t.Name, t.Effect, t.Call, to)
		}
		_ = tw.Flush()
	}
	if len(s.Feeds) > 0 {
		fmt.Fprintf(b, "  feeds (%d):\n", len(s.Feeds))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, f := range s.Feeds {
			fmt.Fprintf(tw, "    %s\t%s\tttl %ds\n", f.Name, f.Path, f.TTL)
		}
		_ = tw.Flush()
	}
	if len(s.Endpoints) > 0 {
		fmt.Fprintf(b, "  endpoints (%d, operator documentation; agents never see them):\n", len(s.Endpoints))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, e := range s.Endpoints {
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", e.Method, e.Path, e.Description)
		}
		_ = tw.Flush()
	}
	if s.Skill != "" {
		fmt.Fprintf(b, "  skill: %s\n", s.Skill)
	}
}

func writeAgent(b *strings.Builder, a Agent) {
	proxy := "no cllama: no managed tools or feeds"
	if a.Cllama {
		proxy = "via cllama"
	}
	fmt.Fprintf(b, "\nagent %s (service %s, %s)\n", a.ID, a.Service, proxy)
	if a.Cllama {
		if len(a.Tools) == 0 {
			b.WriteString("  tools: none\n")
		} else {
			fmt.Fprintf(b, "  tools (%d):\n", len(a.Tools))
			for _, t := range a.Tools {
				when := ""
				if len(t.When) > 0 {
					when = ", while a when: below holds"
				} else if slices.ContainsFunc(t.GrantedBy, func(g Grant) bool { return g.When != "" }) {
					when = ", always (an entry without when: grants it)"
				}
				if t.Mode == manifest.ModeNative {
					fmt.Fprintf(b, "    %s  %s, native (on /mcp)%s\n", t.Canonical, t.Effect, when)
				} else {
					fmt.Fprintf(b, "    %s -> %s  %s%s\n", t.Presented, t.Canonical, t.Effect, when)
				}
				for _, g := range t.GrantedBy {
					fmt.Fprintf(b, "      granted by %s: %s\n", g.Key, g.Rule)
					if g.When != "" {
						// A multi-line expression (`when: |`) keeps its
						// lines, indented under the first.
						fmt.Fprintf(b, "        when: %s\n", strings.ReplaceAll(strings.TrimRight(g.When, " \t\r\n"), "\n", "\n              "))
					}
				}
				if t.From != nil {
					fmt.Fprintf(b, "      declared in %s\n", t.From)
				}
			}
		}
		if len(a.Feeds) == 0 {
			b.WriteString("  feeds: none\n")
		} else {
			fmt.Fprintf(b, "  feeds (%d):\n", len(a.Feeds))
			for _, f := range a.Feeds {
				fmt.Fprintf(b, "    %s <- %s%s  ttl %ds\n", f.Name, f.Source, f.Path, f.TTL)
				if f.SubscribedBy.Key != "" {
					fmt.Fprintf(b, "      subscribed by %s: %s\n", f.SubscribedBy.Key, f.SubscribedBy.Rule)
				}
				if f.DeclaredBy != nil {
					fmt.Fprintf(b, "      declared in %s\n", f.DeclaredBy)
				} else {
					b.WriteString("      defined in the pod file\n")
				}
			}
		}
		if p := a.Policy; p != nil {
			b.WriteString("  policy:\n")
			tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
			for _, l := range []struct {
				name string
				l    Limit
			}{{"max_rounds", p.MaxRounds}, {"timeout_per_tool_ms", p.TimeoutPerToolMS}, {"total_timeout_ms", p.TotalTimeoutMS}, {"max_tool_result_bytes", p.MaxToolResultBytes},
				{"max_tool_calls_per_round", p.MaxToolCallsPerRound}, {"max_tool_calls_per_turn", p.MaxToolCallsPerTurn}, {"max_parallel_calls", p.MaxParallelCalls}} {
				fmt.Fprintf(tw, "    %s\t%d\t(%s)\n", l.name, l.l.Value, l.l.From)
			}
			_ = tw.Flush()
		}
	}
	if len(a.Skills) > 0 {
		fmt.Fprintf(b, "  skills: %s\n", strings.Join(a.Skills, ", "))
	}
	if len(a.Surfaces) > 0 {
		fmt.Fprintf(b, "  surfaces: %s\n", strings.Join(a.Surfaces, ", "))
	}
	if len(a.Reaches) == 0 {
		b.WriteString("  reaches: nothing in the pod\n")
	} else {
		fmt.Fprintf(b, "  reaches (%d):\n", len(a.Reaches))
		for _, r := range a.Reaches {
			fmt.Fprintf(b, "    %s  (%s)\n", r.Service, strings.Join(r.From, "; "))
		}
	}
	if a.Egress {
		b.WriteString("  egress: open (x-claw.egress): it reaches the outside directly, bypassing cllama\n")
	} else {
		b.WriteString("  egress: none (no route out of the pod)\n")
	}
}
