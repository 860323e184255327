package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const netprobeImage = "clawgo/e2e-netprobe:latest"

// probeServices are agents added to the example pod to look at the
// perimeter from inside agent containers: each serves a port and holds
// still, so the others have a live target to fail to reach.
//
//	probe      - names trading-api as its surface
//	probe-peer - two replicas with no surfaces
//	probe-out  - two replicas with x-claw.egress
const probeServices = `
  probe:
    image: ` + netprobeImage + `
    command: [serve]
    x-claw:
      cllama: passthrough
      surfaces: [service://trading-api]
  probe-peer:
    image: ` + netprobeImage + `
    command: [serve]
    x-claw:
      cllama: passthrough
      count: 2
  probe-out:
    image: ` + netprobeImage + `
    command: [serve]
    x-claw:
      cllama: passthrough
      count: 2
      egress: true
`

// buildNetprobe builds the probe image FROM scratch.
func buildNetprobe(t *testing.T) {
	t.Helper()
	ctx := t.TempDir()
	run(t, repoRoot(t), 5*time.Minute, "env", "CGO_ENABLED=0", "GOOS=linux", "go", "build", "-trimpath", "-o", filepath.Join(ctx, "netprobe"), "./e2e/netprobe")
	df := "FROM scratch\nCOPY netprobe /netprobe\nENTRYPOINT [\"/netprobe\"]\n"
	if err := os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, 5*time.Minute, "docker", "build", "-q", "-t", netprobeImage, ".")
}

type probeResult struct {
	Target  string `json:"target"`
	Outcome string `json:"outcome"`
	Status  int    `json:"status"`
	Error   string `json:"error"`
	Millis  int64  `json:"ms"`
}

type route struct {
	Iface       string `json:"iface"`
	Destination string `json:"destination"`
	Gateway     string `json:"gateway"`
	Mask        string `json:"mask"`
}

// netprobe runs the probe binary inside a service's container and decodes
// what it prints.
func (p *pod) netprobe(service string, into any, args ...string) {
	p.t.Helper()
	out := run(p.t, "", time.Minute, "docker", append([]string{"exec", p.container(service), "/netprobe"}, args...)...)
	if err := json.Unmarshal([]byte(out), into); err != nil {
		p.t.Fatalf("netprobe %s in %s: %v\n%s", strings.Join(args, " "), service, err, out)
	}
}

// reach probes targets from inside service and reports each outcome. A
// probe never sends traffic off this machine: a target given as an
// address must be on one of the container's own subnets or on a bridge of
// this host, unless the container has no route to the host at all.
func (p *pod) reach(service string, targets ...string) map[string]probeResult {
	p.t.Helper()
	var routes []route
	p.netprobe(service, &routes, "routes")
	host := hostAddrs(p.t)
	bridges := hostBridges(p.t)
	toHost := slices.ContainsFunc(routes, func(r route) bool { return r.Mask == "0.0.0.0" && host[r.Gateway] })
	for _, target := range targets {
		hostport := strings.SplitN(strings.TrimPrefix(target, "http://"), "/", 2)[0]
		h, _, err := net.SplitHostPort(hostport)
		if err != nil {
			p.t.Fatalf("probe target %q: %v", target, err)
		}
		ip := net.ParseIP(h)
		if ip == nil || host[h] || ip.IsLoopback() || !toHost {
			continue // a name (only the pod's DNS answers), the host, the container itself, or nowhere to go
		}
		own := slices.ContainsFunc(routes, func(r route) bool { return r.Mask != "0.0.0.0" && onSubnet(ip, r) })
		bridged := slices.ContainsFunc(bridges, func(n *net.IPNet) bool { return n.Contains(ip) })
		if !own && !bridged {
			p.t.Fatalf("probe target %s is on none of %s's subnets nor a bridge of this host: it would be routed off this machine", target, service)
		}
	}
	var rs []probeResult
	p.netprobe(service, &rs, append([]string{"probe", "-timeout", "1s"}, targets...)...)
	out := map[string]probeResult{}
	for _, r := range rs {
		out[r.Target] = r
	}
	return out
}

// ipsOf returns a container's address on every network it is on.
func (p *pod) ipsOf(service string) map[string]string {
	p.t.Helper()
	out := run(p.t, "", time.Minute, "docker", "inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}={{$v.IPAddress}} {{end}}", p.container(service))
	ips := map[string]string{}
	for _, f := range strings.Fields(out) {
		k, v, _ := strings.Cut(f, "=")
		ips[k] = v
	}
	return ips
}

// onSubnet reports whether ip is on a route's destination subnet.
func onSubnet(ip net.IP, r route) bool {
	dst, mask := net.ParseIP(r.Destination).To4(), net.ParseIP(r.Mask).To4()
	if dst == nil || mask == nil {
		return false
	}
	return (&net.IPNet{IP: dst, Mask: net.IPMask(mask)}).Contains(ip)
}

// hostBridges are the subnets of this host's container bridges.
func hostBridges(t *testing.T) []*net.IPNet {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var out []*net.IPNet
	for _, i := range ifs {
		if !strings.HasPrefix(i.Name, "br-") && i.Name != "docker0" {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// hostAddrs are the IPv4 addresses this machine holds on any interface.
func hostAddrs(t *testing.T) map[string]bool {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			out[n.IP.String()] = true
		}
	}
	return out
}

// checkPerimeter looks at the pod from inside agent containers: each
// reaches cllama and its surfaces, and nothing else of the pod or the host;
// none has a way out but the one that declares egress.
func checkPerimeter(t *testing.T, p *pod) {
	probes := []string{"probe", "probe-peer-0", "probe-peer-1", "probe-out-0", "probe-out-1"}
	// The probes start with the pod; wait until each answers for itself.
	deadline := time.Now().Add(time.Minute)
	for _, svc := range probes {
		for {
			if r := p.reach(svc, "127.0.0.1:9000")["127.0.0.1:9000"]; r.Outcome == "ok" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not serve its port:\n%s", svc, p.logs(svc))
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	// A listener on every host address: whatever container reaches the
	// host reaches it. It gives the egress agent something to reach (so the
	// probe is known to see reachability) and the others something to miss.
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	hostPort := l.Addr().(*net.TCPAddr).Port
	host := hostAddrs(t)

	mustReach := func(from string, targets ...string) {
		t.Helper()
		for target, r := range p.reach(from, targets...) {
			if r.Outcome != "ok" || (r.Status != 0 && r.Status != 200) {
				t.Errorf("%s cannot reach %s: %s %d %s", from, target, r.Outcome, r.Status, r.Error)
			}
		}
	}
	mustNotReach := func(from string, targets ...string) {
		t.Helper()
		for target, r := range p.reach(from, targets...) {
			if r.Outcome == "ok" {
				t.Errorf("%s reaches %s, outside its perimeter", from, target)
			} else if r.Millis > 1500 {
				t.Errorf("%s -> %s failed only after %d ms (%s)", from, target, r.Millis, r.Outcome)
			}
		}
	}
	// Addresses of other containers: an agent must not reach them by
	// address either. Only addresses on networks the agent is attached to
	// are probed (see reach); for an agent without egress those are all of
	// them, since it has no route anywhere else.
	byAddress := func(service string, port int, networks ...string) []string {
		var out []string
		for net, ip := range p.ipsOf(service) {
			if len(networks) == 0 || slices.Contains(networks, net) {
				out = append(out, fmt.Sprintf("%s:%d", ip, port))
			}
		}
		return out
	}
	// The host's addresses on the pod's networks (their gateways).
	var hostTargets []string
	for _, net := range strings.Fields(run(t, "", time.Minute, "docker", "network", "ls", "-q", "--filter", "label=com.docker.compose.project="+p.project)) {
		gw := strings.TrimSpace(run(t, "", time.Minute, "docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", net))
		for _, g := range strings.Fields(gw) {
			if host[g] {
				hostTargets = append(hostTargets, fmt.Sprintf("%s:%d", g, hostPort))
			}
		}
	}

	t.Run("an agent reaches cllama and its surfaces", func(t *testing.T) {
		mustReach("probe", "http://cllama:8080/health", "trading-api:4000")
		mustReach("probe-peer-0", "http://cllama:8080/health")
		mustReach("probe-out-0", "http://cllama:8080/health")
	})
	t.Run("and nothing else of the pod", func(t *testing.T) {
		others := []string{"market-data:8080", "claw-model:8080", "probe-peer:9000", "probe-peer-0:9000", "probe-out-0:9000"}
		others = append(others, byAddress("claw-model", 8080)...)
		others = append(others, byAddress("market-data", 8080)...)
		others = append(others, byAddress("probe-peer-0", 9000)...)
		mustNotReach("probe", others...)
		// Replicas are agents like any other; a surface of one agent is
		// not another's.
		mustNotReach("probe-peer-0", append(byAddress("probe-peer-1", 9000), "probe-peer-1:9000", "trading-api:4000", "probe:9000")...)
		// Agents with egress share a network with no traffic between its
		// members.
		mustNotReach("probe-out-0", append(byAddress("probe-out-1", 9000, p.project+"_claw-egress"), "probe-out-1:9000", "probe:9000", "claw-model:8080")...)
	})
	t.Run("nor the host", func(t *testing.T) {
		if len(hostTargets) == 0 {
			t.Fatal("found no host address on the pod's networks")
		}
		mustNotReach("probe", hostTargets...)
		mustNotReach("probe-peer-1", hostTargets...)
	})
	t.Run("no route out without egress", func(t *testing.T) {
		for _, svc := range []string{"probe", "probe-peer-0"} {
			var rs []route
			p.netprobe(svc, &rs, "routes")
			for _, r := range rs {
				// Docker before 25 still installs a default route on an
				// internal network; claw's agent networks keep the host's
				// address off their bridge, so its gateway is no one.
				if r.Destination == "0.0.0.0" && r.Mask == "0.0.0.0" && host[r.Gateway] {
					t.Errorf("%s has a default route via %s, an address of this host: %+v", svc, r.Gateway, rs)
				}
			}
		}
	})
	t.Run("egress is a real way out", func(t *testing.T) {
		var rs []route
		p.netprobe("probe-out-0", &rs, "routes")
		i := slices.IndexFunc(rs, func(r route) bool { return r.Destination == "0.0.0.0" && r.Mask == "0.0.0.0" && host[r.Gateway] })
		if i < 0 {
			t.Fatalf("probe-out-0 (x-claw.egress) has no default route via the host: %+v", rs)
		}
		mustReach("probe-out-0", fmt.Sprintf("%s:%d", rs[i].Gateway, hostPort))
	})
	t.Run("the runners are on their own network only", func(t *testing.T) {
		for _, agent := range []string{"analyst", "executor", "scout"} {
			nets := slices.Sorted(func(yield func(string) bool) {
				for k := range p.ipsOf(agent) {
					if !yield(k) {
						return
					}
				}
			})
			want := []string{p.project + "_claw-agent-" + agent}
			if !slices.Equal(nets, want) {
				t.Errorf("%s is on networks %v, want %v", agent, nets, want)
			}
		}
		out := run(t, "", time.Minute, "docker", "network", "inspect", "-f", "{{.Internal}} {{index .Options \"com.docker.network.bridge.inhibit_ipv4\"}}", p.project+"_claw-agent-analyst")
		if strings.TrimSpace(out) != "true true" {
			t.Errorf("the analyst's network: internal, host address inhibited = %q, want \"true true\"", strings.TrimSpace(out))
		}
	})
}
