package kube

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/yaml"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// scheme knows every kind the rendering emits.
func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// strictDecoder decodes YAML into the registered types and fails on an
// unknown or repeated field.
func strictDecoder(s *runtime.Scheme) runtime.Decoder {
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s, kjson.SerializerOptions{Yaml: true, Strict: true})
}

// decoded is a case's manifests decoded into their API types.
type decoded struct {
	c       compiled
	objects map[string]runtime.Object // by file
}

func decodeCase(t *testing.T, name string) decoded {
	t.Helper()
	return decodeDir(t, goldenCases[name])
}

// decodeDir compiles and renders the pod in podDir and decodes its
// manifests.
func decodeDir(t *testing.T, podDir string) decoded {
	t.Helper()
	c := compileCase(t, podDir)
	s := scheme(t)
	dec := strictDecoder(s)
	d := decoded{c: c, objects: map[string]runtime.Object{}}
	for _, f := range c.m.Files {
		switch f.Path {
		case Readme:
			continue
		case Kustomization:
			var k struct {
				APIVersion string   `json:"apiVersion"`
				Kind       string   `json:"kind"`
				Resources  []string `json:"resources"`
			}
			if err := yaml.UnmarshalStrict(f.Data, &k); err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			continue
		}
		obj, gvk, err := dec.Decode(f.Data, nil, nil)
		if err != nil {
			t.Fatalf("%s does not decode strictly: %v", f.Path, err)
		}
		if got := fileName(gvk.Kind, obj.(metav1.Object).GetName()); got != f.Path {
			t.Errorf("%s holds %s %s (want it in %s)", f.Path, gvk.Kind, obj.(metav1.Object).GetName(), got)
		}
		d.objects[f.Path] = obj
	}
	return d
}

func TestStrictDecoderRefusesUnknownFields(t *testing.T) {
	dec := strictDecoder(scheme(t))
	for _, doc := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nbogus: 1\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\nspec: {replicas: 1, replicas: 2}\n",
		"apiVersion: v1\nkind: Widget\nmetadata: {name: a}\n",
	} {
		if _, _, err := dec.Decode([]byte(doc), nil, nil); err == nil {
			t.Errorf("decoded %q", doc)
		}
	}
}

// TestManifestsValid decodes every manifest strictly into its k8s.io/api
// type, checks it against the API's schema (the structured schema
// client-go carries, generated from the official OpenAPI: field names,
// types, list keys such as unique env names and ports), checks names and
// labels with the API's own validation functions, and checks that every
// reference (Secret, ConfigMap, claim, key, Service selector) resolves.
func TestManifestsValid(t *testing.T) {
	tc := applyconfigurations.NewTypeConverter(scheme(t))
	for name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := decodeCase(t, name)
			var k struct{ Resources []string }
			for _, f := range d.c.m.Files {
				if f.Path == Kustomization {
					if err := yaml.Unmarshal(f.Data, &k); err != nil {
						t.Fatal(err)
					}
				}
			}
			if want := sortedKeys(d.objects); !slices.Equal(sorted(k.Resources), want) {
				t.Errorf("kustomization resources %v, want every manifest %v", k.Resources, want)
			}
			for file, obj := range d.objects {
				if _, err := tc.ObjectToTyped(obj); err != nil {
					t.Errorf("%s: schema: %v", file, err)
				}
				checkNames(t, file, obj, d.c.m.Namespace)
			}
			checkReferences(t, d)
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func errsf(t *testing.T, file, what string, errs []string) {
	t.Helper()
	if len(errs) > 0 {
		t.Errorf("%s: %s: %s", file, what, strings.Join(errs, "; "))
	}
}

func checkLabels(t *testing.T, file string, l map[string]string) {
	t.Helper()
	for k, v := range l {
		errsf(t, file, "label key "+k, validation.IsQualifiedName(k))
		errsf(t, file, "label value "+v, validation.IsValidLabelValue(v))
	}
}

func checkPodSpec(t *testing.T, file string, ps corev1.PodSpec) {
	t.Helper()
	for _, c := range ps.Containers {
		errsf(t, file, "container "+c.Name, validation.IsDNS1123Label(c.Name))
		if c.Image == "" {
			t.Errorf("%s: container %s has no image", file, c.Name)
		}
		for _, p := range c.Ports {
			errsf(t, file, "port name "+p.Name, validation.IsValidPortName(p.Name))
		}
		for _, e := range c.Env {
			errsf(t, file, "env "+e.Name, validation.IsEnvVarName(e.Name))
		}
	}
	for _, v := range ps.Volumes {
		errsf(t, file, "volume "+v.Name, validation.IsDNS1123Label(v.Name))
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("%s: pods must not get a service account token", file)
	}
}

func checkNames(t *testing.T, file string, obj runtime.Object, ns string) {
	t.Helper()
	m := obj.(metav1.Object)
	checkLabels(t, file, m.GetLabels())
	switch o := obj.(type) {
	case *corev1.Namespace:
		errsf(t, file, "namespace name", validation.IsDNS1123Label(o.Name))
		return
	case *corev1.Service:
		errsf(t, file, "service name", validation.IsDNS1035Label(o.Name))
		for _, p := range o.Spec.Ports {
			errsf(t, file, "service port name", validation.IsValidPortName(p.Name))
		}
	case *corev1.ConfigMap:
		for k := range o.Data {
			errsf(t, file, "key "+k, validation.IsConfigMapKey(k))
		}
	case *corev1.Secret:
		for k := range o.Data {
			errsf(t, file, "key "+k, validation.IsConfigMapKey(k))
		}
	case *appsv1.Deployment:
		checkLabels(t, file, o.Spec.Template.Labels)
		checkPodSpec(t, file, o.Spec.Template.Spec)
	case *appsv1.StatefulSet:
		checkLabels(t, file, o.Spec.Template.Labels)
		checkPodSpec(t, file, o.Spec.Template.Spec)
	}
	errsf(t, file, "name", validation.IsDNS1123Subdomain(m.GetName()))
	if m.GetNamespace() != ns {
		t.Errorf("%s: namespace %q, want %q", file, m.GetNamespace(), ns)
	}
}

// checkReferences resolves what the manifests name inside the rendering.
func checkReferences(t *testing.T, d decoded) {
	t.Helper()
	secrets, configMaps, claims := map[string]*corev1.Secret{}, map[string]*corev1.ConfigMap{}, map[string]bool{}
	var templates []*corev1.PodTemplateSpec
	var ownTemplates []map[string]bool // claim templates of each pod template
	for _, obj := range d.objects {
		switch o := obj.(type) {
		case *corev1.Secret:
			secrets[o.Name] = o
		case *corev1.ConfigMap:
			configMaps[o.Name] = o
		case *corev1.PersistentVolumeClaim:
			claims[o.Name] = true
		case *appsv1.Deployment:
			if !labels.SelectorFromSet(o.Spec.Selector.MatchLabels).Matches(labels.Set(o.Spec.Template.Labels)) {
				t.Errorf("deployment %s does not select its pods", o.Name)
			}
			templates = append(templates, &o.Spec.Template)
			ownTemplates = append(ownTemplates, nil)
		case *appsv1.StatefulSet:
			if !labels.SelectorFromSet(o.Spec.Selector.MatchLabels).Matches(labels.Set(o.Spec.Template.Labels)) {
				t.Errorf("statefulset %s does not select its pods", o.Name)
			}
			own := map[string]bool{}
			for _, c := range o.Spec.VolumeClaimTemplates {
				own[c.Name] = true
			}
			templates = append(templates, &o.Spec.Template)
			ownTemplates = append(ownTemplates, own)
		}
	}
	hasKey := func(kind, name, key string) {
		t.Helper()
		switch kind {
		case "Secret":
			if s, ok := secrets[name]; !ok {
				t.Errorf("no Secret %s", name)
			} else if _, ok := s.Data[key]; key != "" && !ok {
				t.Errorf("Secret %s has no key %s", name, key)
			}
		case "ConfigMap":
			if c, ok := configMaps[name]; !ok {
				t.Errorf("no ConfigMap %s", name)
			} else if _, ok := c.Data[key]; key != "" && !ok {
				t.Errorf("ConfigMap %s has no key %s", name, key)
			}
		}
	}
	for i, tmpl := range templates {
		for _, c := range tmpl.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					hasKey("Secret", e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
				}
			}
			for _, m := range c.VolumeMounts {
				if !slices.ContainsFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) && !ownTemplates[i][m.Name] {
					t.Errorf("pod %v mounts unknown volume %s", tmpl.Labels, m.Name)
				}
			}
		}
		for _, v := range tmpl.Spec.Volumes {
			switch {
			case v.ConfigMap != nil:
				hasKey("ConfigMap", v.ConfigMap.Name, "")
				for _, it := range v.ConfigMap.Items {
					hasKey("ConfigMap", v.ConfigMap.Name, it.Key)
				}
			case v.Secret != nil:
				hasKey("Secret", v.Secret.SecretName, "")
			case v.Projected != nil:
				for _, src := range v.Projected.Sources {
					for _, it := range src.Secret.Items {
						hasKey("Secret", src.Secret.Name, it.Key)
					}
				}
			case v.PersistentVolumeClaim != nil:
				if !claims[v.PersistentVolumeClaim.ClaimName] {
					t.Errorf("pod %v mounts claim %s, which is not rendered", tmpl.Labels, v.PersistentVolumeClaim.ClaimName)
				}
			}
		}
	}
	for _, obj := range d.objects {
		if s, ok := obj.(*corev1.Service); ok {
			sel := labels.SelectorFromSet(s.Spec.Selector)
			if !slices.ContainsFunc(templates, func(p *corev1.PodTemplateSpec) bool { return sel.Matches(labels.Set(p.Labels)) }) {
				t.Errorf("service %s selects no pod", s.Name)
			}
		}
	}
}

// secretValues are the credentials of a compiled pod: agent tokens,
// provider keys, projected service credentials, and the values of
// environment variables whose names say they are secret.
func secretValues(t *testing.T, res *compile.Result) []string {
	t.Helper()
	var out []string
	for _, a := range res.Agents {
		out = append(out, a.Token)
	}
	for _, f := range res.Output.Files {
		switch {
		case f.Path == compile.ProvidersFile:
			var p manifest.Providers
			if err := json.Unmarshal(f.Data, &p); err != nil {
				t.Fatal(err)
			}
			for _, pr := range p.Providers {
				if pr.APIKey != "" {
					out = append(out, pr.APIKey)
				}
				for _, k := range pr.Keys {
					out = append(out, k.Secret)
				}
			}
		case path.Base(path.Dir(f.Path)) == "service-auth":
			var sa manifest.ServiceAuth
			if err := json.Unmarshal(f.Data, &sa); err != nil {
				t.Fatal(err)
			}
			out = append(out, sa.Token)
		}
	}
	for _, svc := range res.Pod.Services {
		for k, v := range svc.Compose.Environment {
			if v != nil && *v != "" && strings.ContainsAny(k, "_") && (strings.Contains(k, "TOKEN") || strings.Contains(k, "SECRET") || strings.Contains(k, "PASSWORD") || strings.HasSuffix(k, "_KEY")) {
				out = append(out, *v)
			}
		}
	}
	return out
}

// TestSecretsStayInSecrets scans every ConfigMap, and every other file
// that is not a Secret, for the pod's credentials; and checks that the
// agents' context survives whole: each compiled file is a key of the
// agent's ConfigMap or cllama Secret, with the same bytes.
func TestSecretsStayInSecrets(t *testing.T) {
	for name := range goldenCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := decodeCase(t, name)
			secrets := secretValues(t, d.c.res)
			if len(secrets) < 2 {
				t.Fatalf("the case holds too few credentials to check: %v", secrets)
			}
			for _, f := range d.c.m.Files {
				obj := d.objects[f.Path]
				if _, isSecret := obj.(*corev1.Secret); isSecret {
					if f.Mode != modeSecret {
						t.Errorf("%s holds a Secret with mode %v", f.Path, f.Mode)
					}
					continue
				}
				if cm, ok := obj.(*corev1.ConfigMap); ok {
					for k, v := range cm.Data {
						for _, s := range secrets {
							if strings.Contains(v, s) {
								t.Errorf("ConfigMap %s key %s holds the credential %q", cm.Name, k, s)
							}
						}
					}
				}
				for _, s := range secrets {
					if bytes.Contains(f.Data, []byte(s)) {
						t.Errorf("%s holds the credential %q outside a Secret", f.Path, s)
					}
				}
			}
			byName := map[string]runtime.Object{}
			for _, obj := range d.objects {
				byName[obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.(metav1.Object).GetName()] = obj
			}
			for _, a := range d.c.res.Agents {
				prefix := path.Join(compile.ContextDir, a.ID) + "/"
				for _, f := range d.c.res.Output.Files {
					rel, ok := strings.CutPrefix(f.Path, prefix)
					if !ok {
						continue
					}
					key := strings.ReplaceAll(rel, "/", ".")
					var got []byte
					if f.Mode.Perm()&0o044 == 0 {
						if !a.Cllama {
							continue
						}
						s, ok := byName["Secret/"+a.ID+"-cllama"].(*corev1.Secret)
						if !ok {
							t.Fatalf("no Secret %s-cllama", a.ID)
						}
						got = s.Data[key]
					} else {
						cm, ok := byName["ConfigMap/"+a.ID+"-context"].(*corev1.ConfigMap)
						if !ok {
							t.Fatalf("no ConfigMap %s-context", a.ID)
						}
						got = []byte(cm.Data[key])
					}
					if !bytes.Equal(got, f.Data) {
						t.Errorf("%s: rendered as %q, compiled as %q", f.Path, got, f.Data)
					}
				}
				if a.Cllama {
					s := byName["Secret/"+a.ID+"-token"].(*corev1.Secret)
					if string(s.Data["token"]) != a.Token {
						t.Errorf("Secret %s-token holds %q, want the agent's token", a.ID, s.Data["token"])
					}
				}
			}
		})
	}
}
