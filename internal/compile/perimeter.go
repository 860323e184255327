package compile

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/pod"
)

// Perimeter is who may reach whom in the pod. Spec 000 §2 ("Authority and
// identity model") makes topology the first layer of authority:
// `surfaces: [service://X]` grants network reachability and the default is
// no access. The perimeter is computed from the pod alone, as data; each
// target renders it (compose as networks, composegen.go) and none widens
// it.
type Perimeter struct {
	// Agents has one entry per agent (each replica apart), in
	// Result.Agents order.
	Agents []AgentReach
	// Cllama is what the proxy reaches inside the pod: every service it
	// calls on an agent's behalf (tools, feeds) and every model server of
	// the pod, sorted by service. cllama also always reaches the outside
	// (model providers).
	Cllama []Reach
}

// AgentReach is one agent's reachable set.
type AgentReach struct {
	// Agent is the agent id; Service the compose service it runs from.
	Agent   string
	Service string
	// Reaches lists the services the agent reaches: cllama first when the
	// agent uses it, then its surfaces in the order declared.
	Reaches []Reach
	// Egress is x-claw.egress: the agent also has a route out of the pod,
	// and whatever it reaches there bypasses governance.
	Egress bool
}

// Reach is one service reached and where that comes from.
type Reach struct {
	// Service is the pod service reached (CllamaService for the proxy).
	Service string
	// From says why, as the pod file spells it: "x-claw.cllama",
	// "x-claw.surfaces[0]: service://trading-api", "tools of executor",
	// "feed market-summary of analyst", "provider openai (OPENAI_BASE_URL)".
	From []string
	// Agent is set when the service reached is an agent: the two agents
	// (each replica apart) then share a network of their own, and
	// connections go both ways.
	Agent bool
	// Back is set on the reverse of such a reach: another agent names this
	// one as a surface, so this one reaches it too.
	Back bool
}

// Names returns the services reached, in order.
func (a AgentReach) Names() []string {
	out := make([]string, len(a.Reaches))
	for i, r := range a.Reaches {
		out[i] = r.Service
	}
	return out
}

// perimeter computes the pod's reachability from the agents' surfaces and
// cllama use, their compiled tools and feeds, and the model servers named
// by provider base URLs.
func (b *builder) perimeter(agents []*Agent, providers *manifest.Providers) (*Perimeter, error) {
	p := &Perimeter{}
	for _, a := range agents {
		svc := b.pod.Services[a.Service]
		ar := AgentReach{Agent: a.ID, Service: a.Service, Egress: svc.Claw.Egress}
		if a.Cllama {
			ar.Reaches = append(ar.Reaches, Reach{Service: CllamaService, From: []string{"x-claw.cllama"}})
		}
		for i, s := range svc.Claw.Surfaces {
			if s.Scheme != "service" {
				continue
			}
			from := fmt.Sprintf("x-claw.surfaces[%d]: %s", i, s.Raw)
			if s.Target == a.Service {
				b.warns = append(b.warns, fmt.Sprintf("%s: service %q: %s: an agent always reaches itself; the surface adds nothing", b.pod.File, a.Service, from))
				continue
			}
			if j := slices.IndexFunc(ar.Reaches, func(r Reach) bool { return r.Service == s.Target }); j >= 0 {
				ar.Reaches[j].From = append(ar.Reaches[j].From, from)
				continue
			}
			ar.Reaches = append(ar.Reaches, Reach{Service: s.Target, From: []string{from}, Agent: b.pod.Services[s.Target].IsAgent()})
		}
		p.Agents = append(p.Agents, ar)
	}
	// A network is symmetric: an agent named as a surface reaches back the
	// agent that names it (and nothing else of it).
	for i := range p.Agents {
		for _, r := range p.Agents[i].Reaches {
			if !r.Agent || r.Back {
				continue
			}
			for j := range p.Agents {
				t := &p.Agents[j]
				if t.Service != r.Service {
					continue
				}
				from := fmt.Sprintf("%s names %s as a surface (%s)", p.Agents[i].Agent, r.Service, strings.Join(r.From, ", "))
				// Already reached by name (either agent id, or the service the
				// replicas run from): one entry says both.
				if k := slices.IndexFunc(t.Reaches, func(x Reach) bool {
					return x.Service == p.Agents[i].Agent || x.Service == p.Agents[i].Service
				}); k >= 0 {
					t.Reaches[k].From = append(t.Reaches[k].From, from)
					continue
				}
				t.Reaches = append(t.Reaches, Reach{Service: p.Agents[i].Agent, From: []string{from}, Agent: true, Back: true})
			}
		}
	}

	cllama := map[string][]string{}
	add := func(service, from string) {
		if !slices.Contains(cllama[service], from) {
			cllama[service] = append(cllama[service], from)
		}
	}
	for _, a := range agents {
		for _, t := range a.tools {
			add(t.Execution.Service, "tools of "+a.ID)
		}
		for _, f := range a.Feeds {
			add(f.Source, "feed "+f.Name+" of "+a.ID)
		}
	}
	// A service providing tools or feeds is one cllama may be asked to call
	// even before an agent is granted it (a recompile adds the grant while
	// the pod runs), so it is reached whether granted or not.
	for name, sd := range b.descs {
		if len(sd.Descriptor.Tools) > 0 {
			add(name, "descriptor tools")
		}
		if len(sd.Descriptor.Feeds) > 0 {
			add(name, "descriptor feeds")
		}
	}
	if providers != nil {
		for _, name := range sortedKeys(providers.Providers) {
			u, err := url.Parse(providers.Providers[name].BaseURL)
			if err != nil {
				continue
			}
			if target, ok := b.pod.Services[u.Hostname()]; ok {
				if target.IsAgent() {
					return nil, &pod.Error{File: b.pod.File, Key: "x-claw.cllama-defaults.env." + strings.ToUpper(name) + "_BASE_URL", Problem: fmt.Sprintf("provider %q points at agent service %q", name, target.Name), Fix: "point the provider at a model server, not at an agent"}
				}
				add(target.Name, fmt.Sprintf("provider %s (%s_BASE_URL)", name, strings.ToUpper(name)))
			}
		}
	}
	for _, name := range sortedKeys(cllama) {
		p.Cllama = append(p.Cllama, Reach{Service: name, From: cllama[name]})
	}
	return p, nil
}

// Networks of the compose rendering. Each agent has its own internal
// network, so agents never share one: two agents naming the same surface
// both reach it, but not each other, and replicas are agents like any
// other. cllama is on every agent's network, on InternalNet with the
// services it calls, and on the pod's default network for the way out.
const (
	// EgressNetwork is the one network with a route out of the pod that
	// agents join, only with x-claw.egress. Containers on it cannot reach
	// each other (inter-container traffic is off on its bridge).
	EgressNetwork = "claw-egress"
	// bridgeInhibitIPv4 keeps the host's own address off an agent network's
	// bridge: without it an agent could reach the host, and through it any
	// published port, at the network's gateway address.
	bridgeInhibitIPv4 = "com.docker.network.bridge.inhibit_ipv4"
	bridgeEnableICC   = "com.docker.network.bridge.enable_icc"
	// blackholeDNS is the upstream resolver of agents without egress.
	blackholeDNS = "0.0.0.0"
)

// AgentNetwork is the compose network of one agent.
func AgentNetwork(agentID string) string { return "claw-agent-" + agentID }

// LinkNetwork is the network an agent shares with one replica of another
// agent it names as a surface, and with nothing else.
func LinkNetwork(agentID, targetID string) string { return "claw-link-" + agentID + "--" + targetID }

// checkPerimeter refuses what would widen the perimeter or silently not
// work inside it: an agent's own networks, network_mode or links (its
// networks are compiled from its surfaces), published ports or resolvers
// of an agent without egress, and a surface that cannot join a network.
func (b *builder) checkPerimeter() error {
	for _, svc := range b.pod.Agents() {
		c := svc.Compose
		errf := func(key, problem, fix string) error {
			return &pod.Error{File: b.pod.File, Service: svc.Name, Key: key, Problem: problem, Fix: fix}
		}
		const surfacesFix = "remove it: an agent reaches cllama and the services it names in x-claw.surfaces (service://<name>), nothing else"
		switch {
		case c.NetworkMode != "":
			return errf("network_mode", fmt.Sprintf("network_mode %q would take the agent out of the pod's perimeter", c.NetworkMode), surfacesFix)
		case ownNetworks(c.Networks):
			return errf("networks", "an agent's networks are compiled from its surfaces", surfacesFix)
		case len(c.Links) > 0 || len(c.ExternalLinks) > 0:
			return errf("links", "links would reach services outside the agent's surfaces", surfacesFix)
		}
		if svc.Claw.Egress {
			b.warns = append(b.warns, fmt.Sprintf("%s: service %q: x-claw.egress: the agent can reach the outside directly; whatever it reaches there bypasses cllama's governance", b.pod.File, svc.Name))
			continue
		}
		switch {
		case len(c.Ports) > 0:
			return errf("ports", "an agent without egress has no route to or from the host, so a published port would never answer", "remove ports, or set x-claw.egress: true (the agent then also has a route out of the pod)")
		case len(c.DNS) > 0:
			return errf("dns", "an agent without egress resolves the names of its perimeter only", "remove dns, or set x-claw.egress: true")
		}
		if !svc.Claw.CllamaEnabled() {
			b.warns = append(b.warns, fmt.Sprintf("%s: service %q: the agent does not go through cllama and has no route out: it reaches its surfaces only; add x-claw.cllama to govern its model traffic, or x-claw.egress: true if it must reach a provider itself", b.pod.File, svc.Name))
		}
	}
	for _, svc := range b.pod.Agents() {
		for i, s := range svc.Claw.Surfaces {
			if s.Scheme != "service" {
				if !svc.Claw.Egress {
					b.warns = append(b.warns, fmt.Sprintf("%s: service %q: x-claw.surfaces[%d]: %s grants no network reach (only service:// surfaces do); if the agent must reach it itself, set x-claw.egress: true", b.pod.File, svc.Name, i, s.Raw))
				}
				continue
			}
			if t := b.pod.Services[s.Target]; t != nil && t.Compose.NetworkMode != "" {
				return &pod.Error{File: b.pod.File, Service: svc.Name, Key: fmt.Sprintf("x-claw.surfaces[%d]", i), Problem: fmt.Sprintf("service %q uses network_mode %q, so it cannot join the agent's network", s.Target, t.Compose.NetworkMode), Fix: "remove network_mode from " + s.Target + ", or remove the surface"}
			}
		}
	}
	return nil
}

// ownNetworks reports whether a service names networks of its own:
// compose-go puts a service without networks on "default", which is no
// choice of the author's.
func ownNetworks(nets map[string]*types.ServiceNetworkConfig) bool {
	for name, cfg := range nets {
		if name != "default" || cfg != nil {
			return true
		}
	}
	return false
}
