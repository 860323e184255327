package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

// WriteJSON writes the report as one indented JSON document, escaped for
// a terminal (termsafe.JSONDocument): still valid JSON of the same values.
func (r *Report) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := w.Write(termsafe.JSONDocument(b.Bytes()))
	return err
}

// esc escapes a value for the terminal (names, paths, descriptions: a
// descriptor is the service's word, maybe from its image).
var esc = termsafe.String

// join escapes each of ss and joins them with sep.
func join(ss []string, sep string) string { return strings.Join(termsafe.Strings(ss), sep) }

// WriteText writes the report for a terminal: services first (what each
// offers, to whom), then agents (what each may call and read, and why).
// Every value is escaped for the terminal (termsafe).
func (r *Report) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "pod %s (%s)\n", esc(r.Pod), esc(r.File))
	for _, s := range r.Services {
		writeService(b, s)
	}
	for _, a := range r.Agents {
		writeAgent(b, a)
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, wn := range r.Warnings {
			fmt.Fprintf(b, "  %s\n", esc(wn))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeService(b *strings.Builder, s Service) {
	fmt.Fprintf(b, "\nservice %s\n", esc(s.Name))
	if len(s.ReachedBy) == 0 {
		b.WriteString("  reached by: no agent, not cllama\n")
	} else {
		fmt.Fprintf(b, "  reached by: %s\n", join(s.ReachedBy, ", "))
	}
	if s.MCPStdio != nil {
		fmt.Fprintf(b, "  stdio MCP server: %s\n", join(append([]string{s.MCPStdio.Command}, s.MCPStdio.Args...), " "))
	}
	if s.Descriptor == nil {
		b.WriteString("  descriptor: none\n")
		return
	}
	fmt.Fprintf(b, "  descriptor: %s, version %d\n", esc(s.Descriptor.String()), s.Version)
	if s.Description != "" {
		fmt.Fprintf(b, "  description: %s\n", esc(s.Description))
	}
	if s.Auth != nil {
		if s.Auth.Env != "" {
			fmt.Fprintf(b, "  auth: %s token from %s\n", esc(s.Auth.Type), esc(s.Auth.Env))
		} else {
			fmt.Fprintf(b, "  auth: %s\n", esc(s.Auth.Type))
		}
	}
	if s.MCP != "" {
		fmt.Fprintf(b, "  mcp endpoint: %s\n", esc(s.MCP))
	}
	if len(s.Tools) == 0 {
		b.WriteString("  tools: none\n")
	} else {
		fmt.Fprintf(b, "  tools (%d):\n", len(s.Tools))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, t := range s.Tools {
			to := "granted to: " + join(t.GrantedTo, ", ")
			if len(t.GrantedTo) == 0 {
				to = "granted to: nobody"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", esc(t.Name), esc(t.Effect), esc(t.Call), to)
		}
		_ = tw.Flush()
	}
	if len(s.Feeds) > 0 {
		fmt.Fprintf(b, "  feeds (%d):\n", len(s.Feeds))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, f := range s.Feeds {
			fmt.Fprintf(tw, "    %s\t%s\tttl %ds\n", esc(f.Name), esc(f.Path), f.TTL)
		}
		_ = tw.Flush()
	}
	if len(s.Endpoints) > 0 {
		fmt.Fprintf(b, "  endpoints (%d, operator documentation; agents never see them):\n", len(s.Endpoints))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, e := range s.Endpoints {
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", esc(e.Method), esc(e.Path), esc(e.Description))
		}
		_ = tw.Flush()
	}
	if s.Skill != "" {
		fmt.Fprintf(b, "  skill: %s\n", esc(s.Skill))
	}
}

func writeAgent(b *strings.Builder, a Agent) {
	proxy := "no cllama: no managed tools or feeds"
	if a.Cllama {
		proxy = "via cllama"
	}
	fmt.Fprintf(b, "\nagent %s (service %s, %s)\n", esc(a.ID), esc(a.Service), proxy)
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
					fmt.Fprintf(b, "    %s  %s, native (on /mcp)%s\n", esc(t.Canonical), esc(t.Effect), when)
				} else {
					fmt.Fprintf(b, "    %s -> %s  %s%s\n", esc(t.Presented), esc(t.Canonical), esc(t.Effect), when)
				}
				for _, g := range t.GrantedBy {
					fmt.Fprintf(b, "      granted by %s: %s\n", esc(g.Key), esc(g.Rule))
					if g.When != "" {
						// A multi-line expression (`when: |`) keeps its
						// lines, indented under the first; each is escaped.
						lines := strings.Split(strings.TrimRight(g.When, " \t\r\n"), "\n")
						for i, ln := range lines {
							lines[i] = esc(ln)
						}
						fmt.Fprintf(b, "        when: %s\n", strings.Join(lines, "\n              "))
					}
				}
				if t.From != nil {
					fmt.Fprintf(b, "      declared in %s\n", esc(t.From.String()))
				}
			}
		}
		if len(a.Feeds) == 0 {
			b.WriteString("  feeds: none\n")
		} else {
			fmt.Fprintf(b, "  feeds (%d):\n", len(a.Feeds))
			for _, f := range a.Feeds {
				fmt.Fprintf(b, "    %s <- %s%s  ttl %ds\n", esc(f.Name), esc(f.Source), esc(f.Path), f.TTL)
				if f.SubscribedBy.Key != "" {
					fmt.Fprintf(b, "      subscribed by %s: %s\n", esc(f.SubscribedBy.Key), esc(f.SubscribedBy.Rule))
				}
				if f.DeclaredBy != nil {
					fmt.Fprintf(b, "      declared in %s\n", esc(f.DeclaredBy.String()))
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
				fmt.Fprintf(tw, "    %s\t%d\t(%s)\n", l.name, l.l.Value, esc(l.l.From))
			}
			_ = tw.Flush()
		}
	}
	if len(a.Skills) > 0 {
		fmt.Fprintf(b, "  skills: %s\n", join(a.Skills, ", "))
	}
	if len(a.Surfaces) > 0 {
		fmt.Fprintf(b, "  surfaces: %s\n", join(a.Surfaces, ", "))
	}
	if len(a.Reaches) == 0 {
		b.WriteString("  reaches: nothing in the pod\n")
	} else {
		fmt.Fprintf(b, "  reaches (%d):\n", len(a.Reaches))
		for _, r := range a.Reaches {
			fmt.Fprintf(b, "    %s  (%s)\n", esc(r.Service), join(r.From, "; "))
		}
	}
	if a.Egress {
		b.WriteString("  egress: open (x-claw.egress): it reaches the outside directly, bypassing cllama\n")
	} else {
		b.WriteString("  egress: none (no route out of the pod)\n")
	}
}
