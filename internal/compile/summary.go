package compile

import (
	"fmt"
	"strings"
)

// Summary renders what each agent may call and read, the text `claw
// compile` prints.
func Summary(r *Result) string {
	var w strings.Builder
	fmt.Fprintf(&w, "pod %s: %d agent(s)\n", r.Pod.Name, len(r.Agents))
	for i, a := range r.Agents {
		proxy := "no cllama"
		if a.Cllama {
			proxy = "via cllama"
		}
		fmt.Fprintf(&w, "\n%s (service %s, %s)\n", a.ID, a.Service, proxy)
		if len(a.Tools) == 0 {
			w.WriteString("  tools: none\n")
		} else {
			fmt.Fprintf(&w, "  tools (%d):\n", len(a.Tools))
			for _, t := range a.Tools {
				ro := ""
				if t.ReadOnly {
					ro = " [read-only]"
				}
				fmt.Fprintf(&w, "    %s -> %s%s\n", t.Presented, t.Canonical, ro)
			}
		}
		if len(a.Feeds) == 0 {
			w.WriteString("  feeds: none\n")
		} else {
			fmt.Fprintf(&w, "  feeds (%d):\n", len(a.Feeds))
			for _, f := range a.Feeds {
				fmt.Fprintf(&w, "    %s <- %s%s (ttl %ds)\n", f.Name, f.Source, f.Path, f.TTL)
			}
		}
		if len(a.Skills) > 0 {
			fmt.Fprintf(&w, "  skills: %s\n", strings.Join(a.Skills, ", "))
		}
		if r.Perimeter != nil && i < len(r.Perimeter.Agents) {
			fmt.Fprintf(&w, "  reaches: %s\n", ReachLine(r.Perimeter.Agents[i]))
		}
	}
	return w.String()
}

// ReachLine says in one line what an agent reaches: "cllama, trading-api;
// no route out of the pod".
func ReachLine(a AgentReach) string {
	names := "nothing in the pod"
	if len(a.Reaches) > 0 {
		names = strings.Join(a.Names(), ", ")
	}
	if a.Egress {
		return names + "; and the outside (x-claw.egress)"
	}
	return names + "; no route out of the pod"
}
