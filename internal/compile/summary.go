package compile

import (
	"fmt"
	"strings"

	"github.com/clawdapus/clawgo/internal/audit"
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
	if pb := r.Pod.Claw.PodBudget; len(pb) > 0 {
		fmt.Fprintf(&w, "pod budget: %s\n", BudgetLine(pb))
	}
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
				if len(t.Approve) > 0 {
					// A call waits for a person's decision (claw approvals).
					tags += ", approval " + strings.Join(termsafe.Strings(t.Approve), " or ")
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
		if len(a.Budget) > 0 {
			fmt.Fprintf(&w, "  budget: %s\n", BudgetLine(a.Budget))
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

// BudgetLine renders budget entries in one line: "$5.00 per day (warn at
// 80%), 2000 requests per hour, 2000000 tokens per conversation".
func BudgetLine(bs []manifest.Budget) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		var s string
		switch b.Unit {
		case manifest.BudgetUSD:
			s = "$" + audit.FormatUSD(b.Limit)
		default:
			s = fmt.Sprintf("%d %s", b.Limit, b.Unit)
		}
		s += " per " + b.Per
		if b.TZ != "" {
			s += " (" + termsafe.String(b.TZ) + ")"
		}
		if b.Soft > 0 {
			s += fmt.Sprintf(" (warn at %g%%)", b.Soft*100)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
