package kube

import (
	"net/netip"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/clawdapus/clawgo/internal/compile"
)

// A small NetworkPolicy evaluator, after the API's documented semantics:
//   - a pod is isolated for a direction when some policy of its namespace
//     selects it (an empty podSelector selects every pod there) and has
//     that direction in policyTypes (unset: Ingress, plus Egress when the
//     policy has egress rules); an isolated pod allows only what some
//     rule of a policy selecting it allows: policies add up;
//   - a rule with no ports allows every port, one with no peers every
//     peer; a peer with a podSelector only means pods of the policy's
//     namespace, with a namespaceSelector it means pods of the matching
//     namespaces (both: both must match); an ipBlock matches addresses
//     outside the cluster's pods;
//   - a connection needs the client's egress and the server's ingress.

// endpoint is a pod (namespace set) or an address outside the cluster.
type endpoint struct {
	name      string
	namespace string
	labels    map[string]string
	// ports are the named ports of the pod's containers; declared all the
	// ports it serves.
	ports    map[string]int32
	declared []port
	ip       netip.Addr
}

type cluster struct {
	policies   []*networkingv1.NetworkPolicy
	namespaces map[string]map[string]string // labels by namespace
}

func selects(t *testing.T, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %v: %v", sel, err)
	}
	return s.Matches(labels.Set(set))
}

func hasType(p *networkingv1.NetworkPolicy, typ networkingv1.PolicyType) bool {
	if len(p.Spec.PolicyTypes) > 0 {
		return slices.Contains(p.Spec.PolicyTypes, typ)
	}
	return typ == networkingv1.PolicyTypeIngress || len(p.Spec.Egress) > 0
}

func (c *cluster) peerMatches(t *testing.T, peer networkingv1.NetworkPolicyPeer, policyNS string, e endpoint) bool {
	t.Helper()
	if peer.IPBlock != nil {
		if e.namespace != "" {
			return false
		}
		in := func(cidr string) bool {
			p, err := netip.ParsePrefix(cidr)
			if err != nil {
				t.Fatalf("ipBlock %q: %v", cidr, err)
			}
			return p.Contains(e.ip)
		}
		if !in(peer.IPBlock.CIDR) {
			return false
		}
		return !slices.ContainsFunc(peer.IPBlock.Except, in)
	}
	if e.namespace == "" || (peer.PodSelector == nil && peer.NamespaceSelector == nil) {
		return false
	}
	if peer.NamespaceSelector == nil {
		if e.namespace != policyNS {
			return false
		}
	} else if !selects(t, peer.NamespaceSelector, c.namespaces[e.namespace]) {
		return false
	}
	return peer.PodSelector == nil || selects(t, peer.PodSelector, e.labels)
}

func portMatches(ports []networkingv1.NetworkPolicyPort, server endpoint, port int32, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		want := corev1.ProtocolTCP
		if p.Protocol != nil {
			want = *p.Protocol
		}
		if want != proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		n := p.Port.IntVal
		if p.Port.StrVal != "" {
			var ok bool
			if n, ok = server.ports[p.Port.StrVal]; !ok {
				continue
			}
		}
		last := n
		if p.EndPort != nil {
			last = *p.EndPort
		}
		if port >= n && port <= last {
			return true
		}
	}
	return false
}

// allowed decides whether client may open a connection to server's port.
func (c *cluster) allowed(t *testing.T, client, server endpoint, port int32, proto corev1.Protocol) bool {
	t.Helper()
	egress := true
	if client.namespace != "" {
		isolated, ok := false, false
		for _, p := range c.policies {
			if p.Namespace != client.namespace || !selects(t, &p.Spec.PodSelector, client.labels) || !hasType(p, networkingv1.PolicyTypeEgress) {
				continue
			}
			isolated = true
			for _, r := range p.Spec.Egress {
				if !portMatches(r.Ports, server, port, proto) {
					continue
				}
				if len(r.To) == 0 || slices.ContainsFunc(r.To, func(peer networkingv1.NetworkPolicyPeer) bool { return c.peerMatches(t, peer, p.Namespace, server) }) {
					ok = true
				}
			}
		}
		egress = !isolated || ok
	}
	ingress := true
	if server.namespace != "" {
		isolated, ok := false, false
		for _, p := range c.policies {
			if p.Namespace != server.namespace || !selects(t, &p.Spec.PodSelector, server.labels) || !hasType(p, networkingv1.PolicyTypeIngress) {
				continue
			}
			isolated = true
			for _, r := range p.Spec.Ingress {
				if !portMatches(r.Ports, server, port, proto) {
					continue
				}
				if len(r.From) == 0 || slices.ContainsFunc(r.From, func(peer networkingv1.NetworkPolicyPeer) bool { return c.peerMatches(t, peer, p.Namespace, client) }) {
					ok = true
				}
			}
		}
		ingress = !isolated || ok
	}
	return egress && ingress
}

func TestEvaluator(t *testing.T) {
	tcp := corev1.ProtocolTCP
	web := endpoint{name: "web", namespace: "a", labels: map[string]string{"app": "web"}, ports: map[string]int32{"http": 80}}
	db := endpoint{name: "db", namespace: "a", labels: map[string]string{"app": "db"}}
	other := endpoint{name: "other", namespace: "b", labels: map[string]string{"app": "web"}}
	out := endpoint{name: "internet", ip: netip.MustParseAddr("192.0.2.1")}
	np := func(name string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "a"}, Spec: spec}
	}
	c := &cluster{namespaces: map[string]map[string]string{"a": {"name": "a"}, "b": {"name": "b"}}}
	if !c.allowed(t, web, db, 5432, tcp) || !c.allowed(t, other, web, 80, tcp) {
		t.Fatal("without policies everything is allowed")
	}
	c.policies = append(c.policies, np("deny", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Ingress", "Egress"}}))
	if c.allowed(t, web, db, 5432, tcp) || c.allowed(t, other, web, 80, tcp) || c.allowed(t, web, out, 443, tcp) {
		t.Fatal("an empty podSelector isolates every pod")
	}
	httpName, fromAny := intOrNamePtr("http"), map[string]string{"app": "web"}
	c.policies = append(c.policies, np("web-in", networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{MatchLabels: fromAny}}},
			Ports: []networkingv1.NetworkPolicyPort{{Port: httpName}},
		}},
	}))
	if !c.allowed(t, other, web, 80, tcp) || c.allowed(t, other, web, 81, tcp) {
		t.Fatal("an empty namespaceSelector admits pods of every namespace, on the named port only")
	}
	if c.allowed(t, db, web, 80, tcp) {
		t.Fatal("db is isolated for egress, and web admits app=web only")
	}
	if c.allowed(t, other, db, 5432, tcp) {
		t.Fatal("a client without policies still needs the server's ingress")
	}
	c.policies = append(c.policies, np("egress-all", networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
	}))
	if !c.allowed(t, web, web, 80, tcp) || c.allowed(t, web, web, 81, tcp) || c.allowed(t, web, db, 5432, tcp) {
		t.Fatal("policies add up; named ports resolve on the server; db still admits nothing")
	}
	if !c.allowed(t, web, out, 443, tcp) || c.allowed(t, out, web, 80, tcp) {
		t.Fatal("egress rule without peers reaches outside; outside is not a pod peer")
	}
}

func intOrNamePtr(s string) *intstr.IntOrString {
	v := intOrName(s)
	return &v
}

// TestNetworkPoliciesRenderThePerimeter builds every pod of a case, the
// cluster DNS and an address outside, and checks for every pair, on every
// port the server declares and one it does not, that the emitted
// NetworkPolicies allow a connection exactly when the pod's perimeter
// does: an agent reaches cllama (when it uses it), its surfaces and, with
// egress, the outside; cllama reaches the services it calls and the
// outside; a service reaches the services it shares a compose network
// with, and the outside when one of them is not internal; every pod
// reaches DNS; nothing else.
func TestNetworkPoliciesRenderThePerimeter(t *testing.T) {
	for name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := decodeCase(t, name)
			res, ns := d.c.res, d.c.m.Namespace
			c, pods, dns, outside := buildCluster(t, d)

			// What each pod may reach, from the perimeter and the pod file.
			agentIDs := map[string][]string{} // perimeter name -> agent ids
			for _, a := range res.Agents {
				agentIDs[a.Service] = append(agentIDs[a.Service], a.ID)
				if a.Index >= 0 {
					agentIDs[a.ID] = []string{a.ID}
				}
			}
			reach := map[string]map[string]bool{}
			allow := func(from, to string) {
				if reach[from] == nil {
					reach[from] = map[string]bool{}
				}
				reach[from][to] = true
			}
			for _, ar := range res.Perimeter.Agents {
				for _, r := range ar.Reaches {
					if ids, ok := agentIDs[r.Service]; ok {
						for _, id := range ids {
							allow(ar.Agent, id)
						}
					} else {
						allow(ar.Agent, r.Service)
					}
				}
				if ar.Egress {
					allow(ar.Agent, "outside")
				}
			}
			if _, ok := pods[compile.CllamaService]; ok {
				for _, r := range res.Perimeter.Cllama {
					allow(compile.CllamaService, r.Service)
				}
				allow(compile.CllamaService, "outside")
				// cllama replicas share a Redis only they reach.
				allow(compile.CllamaService, RoleState)
			}
			nets := map[string][]string{}
			for _, n := range res.Pod.ServiceNames() {
				svc := res.Pod.Services[n]
				if svc.IsAgent() || svc.Compose.NetworkMode != "" {
					continue
				}
				for net := range svc.Compose.Networks {
					nets[n] = append(nets[n], net)
					if nc, ok := res.Pod.Project.Networks[net]; !ok || !nc.Internal {
						allow(n, "outside")
					}
				}
			}
			for a, an := range nets {
				for b, bn := range nets {
					if a != b && slices.ContainsFunc(an, func(n string) bool { return slices.Contains(bn, n) }) {
						allow(a, b)
					}
				}
			}

			all := []endpoint{dns, outside}
			for _, n := range sortedKeys(pods) {
				all = append(all, pods[n])
			}
			checked := 0
			for _, client := range all {
				if client.name == "dns" {
					continue
				}
				for _, server := range all {
					if server.name == client.name || client.namespace == "" && server.namespace != ns {
						// Between the pod's outside and the cluster's DNS: no
						// policy of the pod's has a say.
						continue
					}
					want := reach[client.name][server.name] || (server.name == "dns" && client.namespace != "")
					declared := server.declared
					for _, p := range declared {
						if got := c.allowed(t, client, server, p.Number, p.Protocol); got != want {
							t.Errorf("%s -> %s:%d/%s: allowed %v, the perimeter says %v", client.name, server.name, p.Number, p.Protocol, got, want)
						}
						checked++
					}
					// A port the server does not declare is open only where the
					// server declares none (a compose network has no ports).
					undeclared := port{Number: 31999, Protocol: corev1.ProtocolTCP}
					wantOther := want && (len(declared) == 0 || server.name == "outside")
					if got := c.allowed(t, client, server, undeclared.Number, undeclared.Protocol); got != wantOther {
						t.Errorf("%s -> %s:%d (undeclared): allowed %v, want %v", client.name, server.name, undeclared.Number, got, wantOther)
					}
					checked++
				}
			}
			if checked < len(all)*len(all) {
				t.Fatalf("checked only %d connections", checked)
			}
			t.Logf("%d connections checked among %d endpoints", checked, len(all))
		})
	}
}

// buildCluster loads a case's NetworkPolicies and pods (by workload name)
// into the evaluator, with the cluster's DNS and an address outside.
func buildCluster(t *testing.T, d decoded) (c *cluster, pods map[string]endpoint, dns, outside endpoint) {
	t.Helper()
	ns := d.c.m.Namespace
	c = &cluster{namespaces: map[string]map[string]string{
		ns:            {"kubernetes.io/metadata.name": ns},
		"kube-system": {"kubernetes.io/metadata.name": "kube-system"},
	}}
	pods = map[string]endpoint{}
	for _, obj := range d.objects {
		var tmpl *corev1.PodTemplateSpec
		var name string
		switch o := obj.(type) {
		case *networkingv1.NetworkPolicy:
			c.policies = append(c.policies, o)
			continue
		case *appsv1.Deployment:
			tmpl, name = &o.Spec.Template, o.Name
		case *appsv1.StatefulSet:
			tmpl, name = &o.Spec.Template, o.Name
		default:
			continue
		}
		e := endpoint{name: name, namespace: ns, labels: tmpl.Labels, ports: map[string]int32{}}
		for _, ct := range tmpl.Spec.Containers {
			for _, p := range ct.Ports {
				e.ports[p.Name] = p.ContainerPort
				e.declared = append(e.declared, port{Number: p.ContainerPort, Protocol: p.Protocol})
			}
		}
		pods[name] = e
	}
	dns = endpoint{name: "dns", namespace: "kube-system", labels: map[string]string{"k8s-app": "kube-dns"},
		declared: []port{{53, corev1.ProtocolUDP}, {53, corev1.ProtocolTCP}}}
	outside = endpoint{name: "outside", ip: netip.MustParseAddr("198.51.100.20"), declared: []port{{443, corev1.ProtocolTCP}}}

	return c, pods, dns, outside
}

// TestPerimeterSpotChecks states the perimeter case's rules one by one,
// so the generic comparison above cannot hide a wrong expectation.
func TestPerimeterSpotChecks(t *testing.T) {
	d := decodeCase(t, "perimeter")
	c, pods, dns, outside := buildCluster(t, d)
	at := func(name string) endpoint {
		switch name {
		case "dns":
			return dns
		case "outside":
			return outside
		}
		e, ok := pods[name]
		if !ok {
			t.Fatalf("no pod %s", name)
		}
		return e
	}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	for _, tc := range []struct {
		from, to string
		port     int32
		proto    corev1.Protocol
		want     bool
	}{
		{"picker-0", "cllama", 8080, tcp, true},
		{"picker-0", "inventory", 5000, tcp, true},
		{"picker-0", "inventory", 5001, tcp, false}, // only declared ports
		{"picker-0", "wiki", 80, tcp, true},
		{"picker-0", "picker-1", 80, tcp, false},   // replicas never reach each other
		{"picker-0", "ledger", 6000, tcp, false},   // a tool service, no surface
		{"picker-0", "model", 8080, tcp, false},    // the model server is cllama's
		{"picker-0", "outside", 443, tcp, false},   // no egress
		{"picker-0", "auditor", 9999, tcp, true},   // names picker: reached back
		{"auditor", "picker-1", 9999, tcp, true},   // an agent surface, any port
		{"auditor", "inventory", 5000, tcp, false}, // not its surface
		{"scout", "outside", 443, tcp, true},       // x-claw.egress
		{"scout", "wiki", 80, tcp, false},
		{"scout", "picker-0", 80, tcp, false},
		{"wiki", "picker-0", 80, tcp, false},      // services never reach agents
		{"inventory", "cllama", 8080, tcp, false}, // only agents reach cllama
		{"cllama", "ledger", 6000, tcp, true},
		{"cllama", "model", 8080, tcp, true},
		{"cllama", "wiki", 80, tcp, false}, // cllama calls no tool or feed there
		{"cllama", "picker-0", 80, tcp, false},
		{"cllama", "outside", 443, tcp, true},
		{"ledger", "outside", 443, tcp, true},     // backend is not internal
		{"ledger", "inventory", 5000, tcp, false}, // no compose network in common
		{"inventory", "wiki", 80, tcp, true},      // both on default
		{"outside", "wiki", 80, tcp, false},
		{"picker-0", "dns", 53, udp, true},
		{"ledger", "dns", 53, tcp, true},
		{"cllama", "dns", 53, udp, true},
	} {
		if got := c.allowed(t, at(tc.from), at(tc.to), tc.port, tc.proto); got != tc.want {
			t.Errorf("%s -> %s:%d/%s: allowed %v, want %v", tc.from, tc.to, tc.port, tc.proto, got, tc.want)
		}
	}
}
