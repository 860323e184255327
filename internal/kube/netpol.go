package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/clawdapus/clawgo/internal/compile"
)

// Where the cluster's DNS runs: kube-dns (or CoreDNS under that label) in
// kube-system, as every conformant cluster labels it.
var (
	dnsNamespace = map[string]string{"kubernetes.io/metadata.name": "kube-system"}
	dnsPods      = map[string]string{"k8s-app": "kube-dns"}
	// Internet is every address: the rule giving a pod a route out. Pods
	// of the namespace stay unreachable through it, since each admits only
	// the peers its own policy names.
	internet = []string{"0.0.0.0/0", "::/0"}
)

// Names of the namespace-wide policies.
const (
	PolicyDefaultDeny = "default-deny"
	PolicyDNS         = "allow-dns"
)

// peer is a set of the pod's pods and the ports they serve (none: any).
type peer struct {
	labels map[string]string
	ports  []port
}

// peerOf resolves a name the perimeter reaches: cllama, one agent replica
// (by its id), every replica of an agent service, or a pod service.
func (r *renderer) peerOf(name string) peer {
	switch a, isAgent := r.agents[name]; {
	case name == compile.CllamaService && r.plan.Cllama != nil:
		return peer{labels: map[string]string{LabelRole: RoleCllama}, ports: []port{{Number: int32(r.plan.Cllama.Port), Protocol: corev1.ProtocolTCP}}}
	case isAgent && a.Index >= 0:
		return peer{labels: map[string]string{LabelRole: RoleAgent, LabelAgent: name}, ports: r.ports[a.Service]}
	case r.agentSvc[name]:
		return peer{labels: map[string]string{LabelRole: RoleAgent, LabelService: name}, ports: r.ports[name]}
	default:
		return peer{labels: map[string]string{LabelRole: RoleService, LabelService: name}, ports: r.ports[name]}
	}
}

// agentsOf lists the agent ids a perimeter name of an agent stands for.
func (r *renderer) agentsOf(name string) []string {
	if a, ok := r.agents[name]; ok && a.Index >= 0 {
		return []string{name}
	}
	var out []string
	for _, w := range r.plan.Workloads {
		if w.Agent != nil && w.Service == name {
			out = append(out, w.Name)
		}
	}
	return out
}

func agentPeer(id string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: RoleAgent, LabelAgent: id}}}
}

func podPeer(labels map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

func policyPorts(ps []port) []networkingv1.NetworkPolicyPort {
	var out []networkingv1.NetworkPolicyPort
	for _, p := range ps {
		proto, n := p.Protocol, intstr.FromInt32(p.Number)
		out = append(out, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &n})
	}
	return out
}

func egressTo(p peer) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{podPeer(p.labels)}, Ports: policyPorts(p.ports)}
}

func internetRule() networkingv1.NetworkPolicyEgressRule {
	var to []networkingv1.NetworkPolicyPeer
	for _, cidr := range internet {
		to = append(to, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
	}
	return networkingv1.NetworkPolicyEgressRule{To: to}
}

// serviceNetworks are the author's compose networks of a pod service (a
// service under network_mode joins none).
func (r *renderer) serviceNetworks(name string) []string {
	sc := r.p.Services[name].Compose
	if sc.NetworkMode != "" {
		return nil
	}
	return sortedKeys(sc.Networks)
}

// routeOut reports whether a pod service is on a network that is not
// internal: compose gives it a route out of the pod.
func (r *renderer) routeOut(name string) bool {
	for _, n := range r.serviceNetworks(name) {
		if nc, ok := r.p.Project.Networks[n]; !ok || !nc.Internal {
			return true
		}
	}
	return false
}

// shareNetwork reports whether two pod services share a compose network of
// the author's.
func (r *renderer) shareNetwork(a, b string) bool {
	nb := r.serviceNetworks(b)
	return slices.ContainsFunc(r.serviceNetworks(a), func(n string) bool { return slices.Contains(nb, n) })
}

// networkPolicies renders the perimeter. The namespace denies everything
// (default-deny) but DNS (allow-dns); each workload's own policy then
// allows exactly its reach, in both directions, since a connection needs
// the client's egress and the server's ingress:
//   - an agent reaches cllama (when it uses it) and what its surfaces name,
//     on the ports they declare, and the internet only with x-claw.egress;
//     it admits the agents that reach it (an agent surface, and back);
//   - cllama admits the agents that use it on its port, and reaches the
//     services it calls (compile.Perimeter.Cllama) and the internet;
//   - a pod service admits cllama when cllama calls it, the agents naming
//     it, and the services sharing one of its compose networks, which it
//     reaches in turn; it reaches the internet when one of its networks is
//     not internal, as compose gives it.
func (r *renderer) networkPolicies() {
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	policy := func(name string, labels map[string]string, spec networkingv1.NetworkPolicySpec) {
		r.add("NetworkPolicy", name, &networkingv1.NetworkPolicy{
			TypeMeta:   typeMeta("networking.k8s.io/v1", "NetworkPolicy"),
			ObjectMeta: r.meta(name, labels),
			Spec:       spec,
		})
	}
	policy(PolicyDefaultDeny, nil, networkingv1.NetworkPolicySpec{PolicyTypes: both})
	udp, tcp, dns := corev1.ProtocolUDP, corev1.ProtocolTCP, intstr.FromInt32(53)
	policy(PolicyDNS, nil, networkingv1.NetworkPolicySpec{
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress: []networkingv1.NetworkPolicyEgressRule{{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: dnsNamespace},
				PodSelector:       &metav1.LabelSelector{MatchLabels: dnsPods},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
		}},
	})

	// Who reaches whom, from the perimeter.
	cllamaFrom := []string{}
	agentFrom := map[string][]string{}
	serviceFrom := map[string][]networkingv1.NetworkPolicyPeer{}
	for _, ar := range r.plan.Perimeter.Agents {
		for _, reach := range ar.Reaches {
			switch {
			case reach.Service == compile.CllamaService:
				cllamaFrom = append(cllamaFrom, ar.Agent)
			case reach.Agent:
				for _, t := range r.agentsOf(reach.Service) {
					if !slices.Contains(agentFrom[t], ar.Agent) {
						agentFrom[t] = append(agentFrom[t], ar.Agent)
					}
				}
			default:
				serviceFrom[reach.Service] = append(serviceFrom[reach.Service], agentPeer(ar.Agent))
			}
		}
	}
	calledByCllama := map[string]bool{}
	for _, reach := range r.plan.Perimeter.Cllama {
		calledByCllama[reach.Service] = true
	}

	if r.plan.Cllama != nil {
		spec := networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: RoleCllama}}, PolicyTypes: both}
		if len(cllamaFrom) > 0 {
			rule := networkingv1.NetworkPolicyIngressRule{Ports: policyPorts(r.peerOf(compile.CllamaService).ports)}
			for _, id := range cllamaFrom {
				rule.From = append(rule.From, agentPeer(id))
			}
			spec.Ingress = append(spec.Ingress, rule)
		}
		for _, reach := range r.plan.Perimeter.Cllama {
			spec.Egress = append(spec.Egress, egressTo(r.peerOf(reach.Service)))
		}
		var state peer
		if st := r.state; st != nil {
			state = peer{labels: map[string]string{LabelRole: RoleState}, ports: []port{{Number: int32(st.Port), Protocol: corev1.ProtocolTCP}}}
			spec.Egress = append(spec.Egress, egressTo(state))
		}
		spec.Egress = append(spec.Egress, internetRule())
		policy(compile.CllamaService, map[string]string{LabelRole: RoleCllama, LabelService: compile.CllamaService}, spec)
		if st := r.state; st != nil {
			// Only cllama reaches its Redis, and Redis reaches nothing.
			policy(st.Service, map[string]string{LabelRole: RoleState, LabelService: st.Service}, networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: state.labels}, PolicyTypes: both,
				Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{podPeer(map[string]string{LabelRole: RoleCllama})}, Ports: policyPorts(state.ports)}},
			})
		}
	}

	for _, ar := range r.plan.Perimeter.Agents {
		a := r.agents[ar.Agent]
		spec := networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: RoleAgent, LabelAgent: a.ID}}, PolicyTypes: both}
		for _, reach := range ar.Reaches {
			spec.Egress = append(spec.Egress, egressTo(r.peerOf(reach.Service)))
		}
		if ar.Egress {
			spec.Egress = append(spec.Egress, internetRule())
		}
		if from := agentFrom[a.ID]; len(from) > 0 {
			rule := networkingv1.NetworkPolicyIngressRule{Ports: policyPorts(r.ports[a.Service])}
			for _, id := range from {
				rule.From = append(rule.From, agentPeer(id))
			}
			spec.Ingress = append(spec.Ingress, rule)
		}
		policy("agent-"+a.ID, map[string]string{LabelRole: RoleAgent, LabelService: a.Service, LabelAgent: a.ID}, spec)
	}

	for _, name := range r.p.ServiceNames() {
		if r.p.Services[name].IsAgent() {
			continue
		}
		self := r.peerOf(name)
		spec := networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: self.labels}, PolicyTypes: both}
		var from []networkingv1.NetworkPolicyPeer
		if calledByCllama[name] && r.plan.Cllama != nil {
			from = append(from, podPeer(map[string]string{LabelRole: RoleCllama}))
		}
		from = append(from, serviceFrom[name]...)
		for _, other := range r.p.ServiceNames() {
			if other == name || r.p.Services[other].IsAgent() || !r.shareNetwork(name, other) {
				continue
			}
			from = append(from, podPeer(r.peerOf(other).labels))
			spec.Egress = append(spec.Egress, egressTo(r.peerOf(other)))
		}
		if len(from) > 0 {
			spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: from, Ports: policyPorts(self.ports)}}
		}
		if r.routeOut(name) {
			spec.Egress = append(spec.Egress, internetRule())
		}
		policy("service-"+name, map[string]string{LabelRole: RoleService, LabelService: name}, spec)
	}
}
