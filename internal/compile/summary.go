package compile

import (
	"fmt"
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/termsafe"
)

// Summary renders what each agent may call and read, the text `claw
// compile` prints. A mediated tool reads "presented -> canonical
// [mediated]" (the model calls it by its presented name); a native one
// "canonical [native]" (the runner calls it on cllama's /mcp). Names,
// paths and expressions, which descriptors (a service's word) can supply,
// are escaped for the terminal (termsafe).
func Summary(r *Result) string {
	esc := termsafe.String
	var w strings.Builder
	fmt.Fprintf(&w, "pod %s: %d agent(s)\n", esc(r.Pod.Name), len(r.Agents))
	for i, a := range r.Agents {
		proxy := "no cllama"
		if a.Cllama {
			proxy = "via cllama"
		}
		fmt.Fprintf(&w, "\n%s (service %s, %s)\n", esc(a.ID), esc(a.Service), proxy)
		if len(a.Tools) == 0 {
			w.WriteString("  tools: none\n")
		} else {
			fmt.Fprintf(&w, "  tools (%d):\n", len(a.Tools))
			for _, t := range a.Tools {
				tags := t.Mode
				if tags == "" {
					tags = manifest.ModeMediated
				}
				if t.ReadOnly {
					tags += ", read-only"
				}
				if len(t.When) > 0 {
					tags += ", when " + strings.Join(termsafe.Strings(t.When), " or ")
				}
				if t.Mode == manifest.ModeNative {
					// The runner calls it by its canonical name on /mcp.
					fmt.Fprintf(&w, "    %s [%s]\n", esc(t.Canonical), tags)
					continue
				}
				fmt.Fprintf(&w, "    %s -> %s [%s]\n", esc(t.Presented), esc(t.Canonical), tags)
			}
		}
		if len(a.rules) > 0 {
			fmt.Fprintf(&w, "  rules (%d):\n", len(a.rules))
			for _, r := range a.rules {
				// A multi-line expression (`when: |`) keeps its lines,
				// indented under the first, each escaped.
				lines := strings.Split(strings.TrimRight(r.When, " \t\r\n"), "\n")
				when := strings.Join(termsafe.Strings(lines), "\n      ")
				fmt.Fprintf(&w, "    %s: %s\n      (%s)\n", esc(r.ID), when, esc(r.Source))
			}
		}
		if len(a.Feeds) == 0 {
			w.WriteString("  feeds: none\n")
		} else {
			fmt.Fprintf(&w, "  feeds (%d):\n", len(a.Feeds))
			for _, f := range a.Feeds {
				fmt.Fprintf(&w, "    %s <- %s%s (ttl %ds)\n", esc(f.Name), esc(f.Source), esc(f.Path), f.TTL)
			}
		}
		if len(a.Skills) > 0 {
			fmt.Fprintf(&w, "  skills: %s\n", strings.Join(termsafe.Strings(a.Skills), ", "))
		}
		if r.Perimeter != nil && i < len(r.Perimeter.Agents) {
			fmt.Fprintf(&w, "  reaches: %s\n", ReachLine(r.Perimeter.Agents[i]))
		}
	}
	return w.String()
}

// ReachLine says in one line what an agent reaches: "cllama, trading-api;
// no route out of the pod" (the names escaped for the terminal).
func ReachLine(a AgentReach) string {
	names := "nothing in the pod"
	if len(a.Reaches) > 0 {
		names = strings.Join(termsafe.Strings(a.Names()), ", ")
	}
	if a.Egress {
		return names + "; and the outside (x-claw.egress)"
	}
	return names + "; no route out of the pod"
}
