package kube

import (
	"maps"
	"slices"
	"strings"
	"testing"

	yamlv3 "gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/clawdapus/clawgo/internal/compile"
)

// Compose and Kubernetes are two renderings of one compile.Plan. These
// tests compile a real pod (examples/trading-desk, what `make demo` runs)
// and every golden case, derive what a user relies on from the plan, and
// check that compose.generated.yml and the manifests both say it.

const examplePod = "../../examples/trading-desk"

// planCases are the golden cases and the example pod, by name.
func planCases() map[string]string {
	cases := maps.Clone(goldenCases)
	cases["example"] = examplePod
	return cases
}

// composeService is a service of compose.generated.yml as these tests
// read it.
type composeService struct {
	Image       string             `yaml:"image"`
	Build       any                `yaml:"build"`
	NetworkMode string             `yaml:"network_mode"`
	Networks    map[string]any     `yaml:"networks"`
	Environment map[string]*string `yaml:"environment"`
}

func composeServices(t *testing.T, res *compile.Result) map[string]composeService {
	t.Helper()
	for _, f := range res.Output.Files {
		if f.Path != compile.GeneratedFile {
			continue
		}
		var gen struct {
			Services map[string]composeService `yaml:"services"`
		}
		if err := yamlv3.Unmarshal(f.Data, &gen); err != nil {
			t.Fatal(err)
		}
		return gen.Services
	}
	t.Fatalf("no %s", compile.GeneratedFile)
	return nil
}

// podTemplates are the pods of the manifests' Deployments and
// StatefulSets, by workload name.
func podTemplates(d decoded) map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	for _, obj := range d.objects {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			out[o.Name] = o.Spec.Template
		case *appsv1.StatefulSet:
			out[o.Name] = o.Spec.Template
		}
	}
	return out
}

// TestTokensAreSecretReferencesInBothTargets: an agent's token is a
// secret of the plan, and wherever a variable holds it the manifests read
// it from the agent's own token Secret; no ConfigMap and no literal value
// holds any token. Compose, which has no secret store, gives the token in
// exactly the variables the plan names, in a file only its owner reads.
func TestTokensAreSecretReferencesInBothTargets(t *testing.T) {
	for name, dir := range planCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := decodeDir(t, dir)
			res, plan := d.c.res, d.c.res.Plan
			tokens := map[string]string{}
			for _, a := range res.Agents {
				tokens[a.ID] = a.Token
			}
			secrets := map[string]*corev1.Secret{}
			for _, obj := range d.objects {
				switch o := obj.(type) {
				case *corev1.Secret:
					secrets[o.Name] = o
				case *corev1.ConfigMap:
					for k, v := range o.Data {
						for id, tok := range tokens {
							if strings.Contains(v, tok) {
								t.Errorf("ConfigMap %s key %s holds %s's token", o.Name, k, id)
							}
						}
					}
				}
			}
			templates := podTemplates(d)
			gen := composeServices(t, res)
			for _, a := range res.Agents {
				s := plan.Secret(compile.TokenSecretID(a.ID))
				if s == nil || s.Kind != compile.SecretAgentToken || s.Agent != a.ID {
					t.Fatalf("%s: token secret %+v", a.ID, s)
				}
				if a.Cllama != (len(s.Env) > 0) {
					t.Errorf("%s: cllama %v, token variables %v", a.ID, a.Cllama, s.Env)
				}
				if a.Cllama && string(secrets[a.ID+"-token"].Data["token"]) != a.Token {
					t.Errorf("%s: the Secret %s-token does not hold its token", a.ID, a.ID)
				}
				var inCompose []compile.EnvRef
				for n, v := range gen[a.ID].Environment {
					if v != nil && *v == a.Token {
						inCompose = append(inCompose, compile.EnvRef{Workload: a.ID, Name: n})
					}
				}
				slices.SortFunc(inCompose, func(x, y compile.EnvRef) int { return strings.Compare(x.Name, y.Name) })
				if !slices.Equal(inCompose, s.Env) {
					t.Errorf("%s: compose gives the token in %v, the plan says %v", a.ID, inCompose, s.Env)
				}
			}
			for _, w := range plan.Workloads {
				tmpl, ok := templates[w.Name]
				if !ok {
					t.Fatalf("no workload %s", w.Name)
				}
				for _, e := range tmpl.Spec.Containers[0].Env {
					for id, tok := range tokens {
						if strings.Contains(e.Value, tok) {
							t.Errorf("%s: %s is %s's token as a literal", w.Name, e.Name, id)
						}
					}
					pv := compile.Var(w.Env, e.Name)
					if pv == nil {
						t.Errorf("%s: %s is not in the plan", w.Name, e.Name)
						continue
					}
					s := plan.Secret(pv.Secret)
					if s == nil || s.Kind != compile.SecretAgentToken {
						continue
					}
					if ref := e.ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != s.Agent+"-token" || ref.SecretKeyRef.Key != "token" || s.Agent != w.Name {
						t.Errorf("%s: %s does not read %s's token Secret: %+v", w.Name, e.Name, s.Agent, e)
					}
				}
			}
			if tmpl, ok := templates[compile.CllamaService]; ok {
				for _, e := range tmpl.Spec.Containers[0].Env {
					for id, tok := range tokens {
						if strings.Contains(e.Value, tok) {
							t.Errorf("cllama's %s is %s's token", e.Name, id)
						}
					}
				}
			}
		})
	}
}

// TestReachabilityIsThePlansInBothTargets: what each agent reaches is
// the same in the compose networks (the containers sharing a network with
// it; claw-egress joins nobody to anybody) and under the NetworkPolicies
// (every pod it may connect to, on a port the pod serves), and it is
// exactly what the plan's perimeter says; so is the way out of x-claw.egress.
// cllama reaches every service the perimeter says in both. (Inbound, the
// targets differ by design: compose networks are symmetric, policies are
// not, see the README.)
func TestReachabilityIsThePlansInBothTargets(t *testing.T) {
	for name, dir := range planCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := decodeDir(t, dir)
			plan := d.c.res.Plan
			c, pods, _, outside := buildCluster(t, d)
			gen := composeServices(t, d.c.res)

			// The plan: perimeter names expanded to workloads.
			expand := func(n string) []string {
				if w := plan.Workload(n); w != nil || n == compile.CllamaService {
					return []string{n}
				}
				var out []string
				for _, w := range plan.Workloads {
					if w.Agent != nil && w.Service == n {
						out = append(out, w.Name)
					}
				}
				return out
			}
			// Compose: who shares a network with whom.
			members := map[string][]string{}
			for svc, s := range gen {
				nets := slices.Collect(maps.Keys(s.Networks))
				if len(nets) == 0 && s.NetworkMode == "" {
					nets = []string{"default"}
				}
				for _, n := range nets {
					members[n] = append(members[n], svc)
				}
			}
			composeReach := func(from string) []string {
				var out []string
				for n := range gen[from].Networks {
					if n == compile.EgressNetwork {
						continue
					}
					for _, m := range members[n] {
						if m != from && !slices.Contains(out, m) {
							out = append(out, m)
						}
					}
				}
				slices.Sort(out)
				return out
			}
			// Kubernetes: whom the policies let it connect to.
			kubeAllows := func(from, to string) bool {
				server := pods[to]
				ports := server.declared
				if len(ports) == 0 {
					ports = []port{{Number: 31999, Protocol: corev1.ProtocolTCP}}
				}
				return slices.ContainsFunc(ports, func(p port) bool { return c.allowed(t, pods[from], server, p.Number, p.Protocol) })
			}
			kubeReach := func(from string) []string {
				var out []string
				for _, to := range sortedKeys(pods) {
					if to != from && kubeAllows(from, to) {
						out = append(out, to)
					}
				}
				return out
			}

			for _, ar := range plan.Perimeter.Agents {
				var want []string
				for _, r := range ar.Reaches {
					for _, n := range expand(r.Service) {
						if !slices.Contains(want, n) {
							want = append(want, n)
						}
					}
				}
				slices.Sort(want)
				if got := composeReach(ar.Agent); !slices.Equal(got, want) {
					t.Errorf("%s reaches %v over the compose networks, the plan says %v", ar.Agent, got, want)
				}
				if got := kubeReach(ar.Agent); !slices.Equal(got, want) {
					t.Errorf("%s reaches %v under the NetworkPolicies, the plan says %v", ar.Agent, got, want)
				}
				_, composeOut := gen[ar.Agent].Networks[compile.EgressNetwork]
				kubeOut := c.allowed(t, pods[ar.Agent], outside, 443, corev1.ProtocolTCP)
				if composeOut != ar.Egress || kubeOut != ar.Egress {
					t.Errorf("%s: a way out in compose %v, in Kubernetes %v, the plan says %v", ar.Agent, composeOut, kubeOut, ar.Egress)
				}
			}
			if plan.Cllama == nil {
				if _, ok := gen[compile.CllamaService]; ok {
					t.Error("compose runs a cllama the plan has not")
				}
				return
			}
			fromCllama := composeReach(compile.CllamaService)
			for _, r := range plan.Perimeter.Cllama {
				if !slices.Contains(fromCllama, r.Service) || !kubeAllows(compile.CllamaService, r.Service) {
					t.Errorf("cllama reaches %s in compose: %v, in Kubernetes: %v; the plan says it does (%s)", r.Service, slices.Contains(fromCllama, r.Service), kubeAllows(compile.CllamaService, r.Service), strings.Join(r.From, ", "))
				}
			}
		})
	}
}

// TestImagesAreThePlansInBothTargets: every workload and cllama run the
// plan's image in compose and in the manifests; a service that builds its
// image without naming it is built by compose and named by the plan.
func TestImagesAreThePlansInBothTargets(t *testing.T) {
	for name, dir := range planCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := decodeDir(t, dir)
			plan := d.c.res.Plan
			gen := composeServices(t, d.c.res)
			templates := podTemplates(d)
			listed := map[string]bool{}
			for _, im := range d.c.m.Images {
				listed[im.Name] = true
			}
			check := func(workload, image, build string) {
				if image == "" {
					t.Errorf("%s: the plan names no image", workload)
				}
				s, ok := gen[workload]
				switch {
				case !ok:
					t.Errorf("compose has no service %s", workload)
				case s.Image == "" && (build == "" || s.Build == nil):
					t.Errorf("compose runs no image for %s", workload)
				case s.Image != "" && s.Image != image:
					t.Errorf("%s: compose runs %q, the plan says %q", workload, s.Image, image)
				}
				got := "nothing"
				if tmpl, ok := templates[workload]; ok {
					got = tmpl.Spec.Containers[0].Image
				}
				if got != image {
					t.Errorf("%s: Kubernetes runs %q, the plan says %q", workload, got, image)
				}
				if !listed[image] {
					t.Errorf("%s: %q is not among the images the cluster must pull", workload, image)
				}
			}
			for _, w := range plan.Workloads {
				check(w.Name, w.Image, w.Build)
			}
			if plan.Cllama != nil {
				check(compile.CllamaService, plan.Cllama.Image, "")
			}
		})
	}
}
