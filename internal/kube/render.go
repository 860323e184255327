package kube

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
)

// Labels claw puts on the objects it renders. Pods carry LabelPod,
// LabelRole and LabelService, agents also LabelAgent (their replicas
// share LabelService); the NetworkPolicies select pods by them.
const (
	LabelPod       = "claw.pod"
	LabelRole      = "claw.role"
	LabelService   = "claw.service"
	LabelAgent     = "claw.agent"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "claw"
)

// Values of LabelRole.
const (
	RoleAgent  = "agent"
	RoleCllama = "cllama"
	// RoleState is the Redis that cllama replicas share (continuity).
	RoleState   = "cllama-state"
	RoleService = "service"
)

// Names of the objects claw adds besides the pod's own.
const (
	// CllamaProviders is the Secret holding providers.json.
	CllamaProviders = "cllama-providers"
	// CllamaHistory is cllama's session history claim.
	CllamaHistory = "cllama-history"
	// HistorySize is the storage the history claim (and every claim of a
	// named volume) asks for.
	HistorySize = "1Gi"
	// cllamaUID runs cllama as a non-root user; fsGroup makes the mounted
	// secrets readable and the history claim writable by it.
	cllamaUID = 65532
)

// File is one rendered file, its path relative to the output directory.
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Manifests is a rendered pod.
type Manifests struct {
	// Namespace is the namespace every object lives in (the pod name).
	Namespace string
	// Files are the manifests, kustomization.yaml and README.md, sorted
	// by path. Files holding a Secret are 0600.
	Files []File
	// Images are the images the cluster must pull, sorted by name.
	Images []Image
	// Warnings are compose features the rendering leaves out or changes.
	Warnings []string
}

// object is one rendered Kubernetes object.
type object struct {
	kind, name string
	obj        runtime.Object
}

type renderer struct {
	// state is the Redis cllama replicas share, when it renders one
	// (stateStore).
	state *compile.SharedState
	p     *pod.Pod
	plan  *compile.Plan
	ns    string
	files map[string]compile.File
	// ports are the ports each compose service (agent or not) serves.
	ports map[string][]port
	// agents by id; agentSvc marks agent service names.
	agents   map[string]*compile.Agent
	agentSvc map[string]bool
	// volumeUsers lists the services mounting each named volume.
	volumeUsers map[string][]string
	objects     []object
	images      map[string]*Image
	warns       []string
}

// Render turns a compiled pod into Kubernetes manifests. It renders
// res.Plan, reading the compiled files from res.Output and the files of
// the pod directory that services bind-mount read-only; it writes
// nothing.
func Render(res *compile.Result) (*Manifests, error) {
	if res == nil || res.Pod == nil || res.Output == nil || res.Plan == nil || res.Plan.Perimeter == nil {
		return nil, fmt.Errorf("kube: an incomplete compile result")
	}
	r := &renderer{
		p:           res.Pod,
		plan:        res.Plan,
		files:       map[string]compile.File{},
		ports:       map[string][]port{},
		agents:      map[string]*compile.Agent{},
		agentSvc:    map[string]bool{},
		volumeUsers: map[string][]string{},
		images:      map[string]*Image{},
	}
	for _, f := range res.Output.Files {
		r.files[f.Path] = f
	}
	if err := r.checkNames(); err != nil {
		return nil, err
	}
	r.ns = r.p.Name
	for _, w := range r.plan.Workloads {
		if a := w.Agent; a != nil {
			r.agents[a.ID] = a
			r.agentSvc[a.Service] = true
		}
	}
	for _, name := range r.p.ServiceNames() {
		sc := r.p.Services[name].Compose
		ps, err := servicePorts(sc)
		if err != nil {
			return nil, r.errf(name, "expose", err.Error(), "write ports as N, N/udp or N-M")
		}
		r.ports[name] = ps
		for _, v := range sc.Volumes {
			if v.Type == "volume" && v.Source != "" && !slices.Contains(r.volumeUsers[v.Source], name) {
				r.volumeUsers[v.Source] = append(r.volumeUsers[v.Source], name)
			}
		}
	}

	r.add("Namespace", r.ns, &corev1.Namespace{
		TypeMeta:   typeMeta("v1", "Namespace"),
		ObjectMeta: metav1.ObjectMeta{Name: r.ns, Labels: map[string]string{LabelPod: r.ns, LabelManagedBy: managedBy}},
	})
	if err := r.volumeClaims(); err != nil {
		return nil, err
	}
	for _, w := range r.plan.Workloads {
		if w.Agent == nil {
			if err := r.service(w); err != nil {
				return nil, err
			}
		}
	}
	for _, w := range r.plan.Workloads {
		if w.Agent != nil {
			if err := r.agent(w); err != nil {
				return nil, err
			}
		}
	}
	if err := r.agentServices(); err != nil {
		return nil, err
	}
	if r.plan.Cllama != nil {
		if err := r.cllama(r.plan.Cllama); err != nil {
			return nil, err
		}
	}
	r.networkPolicies()
	return r.manifests()
}

// checkNames refuses names Kubernetes cannot use: the namespace is the pod
// name, objects are named after services and agent ids, and every service
// and agent is a Service name (a DNS label starting with a letter).
func (r *renderer) checkNames() error {
	if errs := validation.IsDNS1123Label(r.p.Name); len(errs) > 0 {
		return &pod.Error{File: r.p.File, Key: "x-claw.pod", Problem: fmt.Sprintf("pod name %q is not a Kubernetes namespace name: %s", r.p.Name, strings.Join(errs, "; ")), Fix: "name the pod with lowercase letters, digits and '-' (at most 63)"}
	}
	for _, name := range r.p.ServiceNames() {
		ids := []string{name}
		if svc := r.p.Services[name]; svc.IsAgent() {
			ids = append(ids, compile.AgentIDs(svc)...)
		}
		for _, id := range ids {
			if errs := validation.IsDNS1035Label(id); len(errs) > 0 {
				return r.errf(name, "services."+name, fmt.Sprintf("%q is not usable as a Kubernetes name: %s", id, strings.Join(errs, "; ")), "name services with lowercase letters, digits and '-', starting with a letter (at most 63 with a replica suffix)")
			}
		}
	}
	return nil
}

func (r *renderer) errf(service, key, problem, fix string) error {
	return &pod.Error{File: r.p.File, Service: service, Key: key, Problem: problem, Fix: fix}
}

func (r *renderer) warnf(service, format string, args ...any) {
	r.warns = append(r.warns, fmt.Sprintf("%s: service %q: %s", r.p.File, service, fmt.Sprintf(format, args...)))
}

func (r *renderer) add(kind, name string, obj runtime.Object) {
	r.objects = append(r.objects, object{kind: kind, name: name, obj: obj})
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// meta is the metadata of a namespaced object.
func (r *renderer) meta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{LabelPod: r.ns, LabelManagedBy: managedBy}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: r.ns, Labels: l}
}

// podLabels are the labels of a workload's pods; selector the subset its
// controller selects them by.
func (r *renderer) podLabels(role, service, agent string) (labels, selector map[string]string) {
	selector = map[string]string{LabelRole: role}
	if agent != "" {
		selector[LabelAgent] = agent
	} else if service != "" {
		selector[LabelService] = service
	}
	labels = map[string]string{LabelPod: r.ns, LabelRole: role}
	for k, v := range selector {
		labels[k] = v
	}
	if service != "" {
		labels[LabelService] = service
	}
	return labels, selector
}

// secret adds a Secret.
func (r *renderer) secret(name string, labels map[string]string, data map[string][]byte) {
	r.add("Secret", name, &corev1.Secret{
		TypeMeta:   typeMeta("v1", "Secret"),
		ObjectMeta: r.meta(name, labels),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	})
}

// envVars is a workload's environment: a variable holding an agent's
// token reads that agent's token Secret, one the author wrote reads the
// workload's env Secret (returned as data), and what claw sets stays
// literal. A variable without a value is left out (compose would take it
// from the shell that runs it, and a cluster has none).
func (r *renderer) envVars(workload string, env []compile.EnvVar) ([]corev1.EnvVar, map[string][]byte, error) {
	var out []corev1.EnvVar
	data := map[string][]byte{}
	for _, e := range env {
		if e.Unset {
			r.warnf(workload, "environment.%s has no value (compose takes it from the shell running it); it is not rendered", e.Name)
			continue
		}
		if s := r.plan.Secret(e.Secret); s != nil && s.Kind == compile.SecretAgentToken {
			out = append(out, secretEnv(e.Name, s.Agent+"-token", "token"))
			continue
		}
		if !e.Authored {
			out = append(out, corev1.EnvVar{Name: e.Name, Value: e.Value})
			continue
		}
		if errs := validation.IsConfigMapKey(e.Name); len(errs) > 0 {
			return nil, nil, fmt.Errorf("environment variable %q cannot be a Secret key: %s", e.Name, strings.Join(errs, "; "))
		}
		data[e.Name] = []byte(e.Value)
		out = append(out, secretEnv(e.Name, workload+"-env", e.Name))
	}
	return out, data, nil
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

// agentFiles splits an agent's context as the plan lists it: files only
// cllama reads (credentials, 0600) go to the Secret cllama mounts, the
// others to the ConfigMap the agent mounts. Keys are the paths below the
// agent's directory with "/" as "."; items map them back.
func (r *renderer) agentFiles(w *compile.Workload) (secret, public map[string][]byte, secretItems, publicItems []corev1.KeyToPath, err error) {
	secret, public = map[string][]byte{}, map[string][]byte{}
	prefix := path.Join(compile.ContextDir, w.Name) + "/"
	for _, cf := range w.Context {
		rel, ok := strings.CutPrefix(cf.Path, prefix)
		f, written := r.files[cf.Path]
		if !ok || !written {
			return nil, nil, nil, nil, fmt.Errorf("kube: the compile result has no %s in the context of %s", cf.Path, w.Name)
		}
		key := strings.ReplaceAll(rel, "/", ".")
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return nil, nil, nil, nil, fmt.Errorf("kube: %s cannot be a key: %s", cf.Path, strings.Join(errs, "; "))
		}
		item := corev1.KeyToPath{Key: key, Path: rel}
		dst, items := public, &publicItems
		if cf.Secret {
			dst, items = secret, &secretItems
		}
		if _, dup := dst[key]; dup {
			return nil, nil, nil, nil, fmt.Errorf("kube: %s: two files of agent %s map to key %q", cf.Path, w.Name, key)
		}
		dst[key] = f.Data
		*items = append(*items, item)
	}
	return secret, public, secretItems, publicItems, nil
}

// agent renders one agent: its Deployment (one pod), the ConfigMap of
// what it mounts (contract, pod view, skills), its token Secret, the
// Secret of the context only cllama reads, its authored environment and,
// with native tools, the Secret of its MCP client configuration.
func (r *renderer) agent(w *compile.Workload) error {
	a := w.Agent
	svc := r.p.Services[a.Service]
	labels, selector := r.podLabels(RoleAgent, a.Service, a.ID)
	objLabels := map[string]string{LabelRole: RoleAgent, LabelService: a.Service, LabelAgent: a.ID}
	secretData, public, _, publicItems, err := r.agentFiles(w)
	if err != nil {
		return err
	}
	env, envData, err := r.envVars(a.ID, w.Env)
	if err != nil {
		return r.errf(a.Service, "environment", err.Error(), "rename the variable")
	}
	if a.Cllama {
		r.secret(a.ID+"-token", objLabels, map[string][]byte{"token": []byte(a.Token)})
	}
	if len(envData) > 0 {
		r.secret(a.ID+"-env", objLabels, envData)
	}
	if a.Cllama && len(secretData) > 0 {
		r.secret(a.ID+"-cllama", objLabels, secretData)
	}
	r.add("ConfigMap", a.ID+"-context", &corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: r.meta(a.ID+"-context", objLabels),
		Data:       stringData(public),
	})

	ps, err := r.podSpec(w, svc.Compose, env)
	if err != nil {
		return err
	}
	// The plan's mounts: the contract and pod view file by file, as
	// compose mounts them, so the image's own /claw stays; skills as a
	// directory; the MCP client configuration, which holds the agent's
	// token, from a Secret of its own mounted into this agent only.
	ps.Volumes = append(ps.Volumes, corev1.Volume{Name: "claw-context", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: a.ID + "-context"}},
	}})
	c := &ps.Containers[0]
	prefix := path.Join(compile.ContextDir, a.ID) + "/"
	for _, m := range w.Mounts {
		rel, inContext := strings.CutPrefix(m.Source, prefix)
		switch {
		case m.Source == compile.MCPConfigPath(a.ID):
			f, ok := r.files[m.Source]
			if !ok {
				return fmt.Errorf("kube: the compile result has no %s", m.Source)
			}
			name := path.Base(m.Source)
			r.secret(a.ID+"-mcp", objLabels, map[string][]byte{name: f.Data})
			ps.Volumes = append(ps.Volumes, corev1.Volume{Name: "claw-mcp", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: a.ID + "-mcp"},
			}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "claw-mcp", MountPath: m.Target, SubPath: name, ReadOnly: m.ReadOnly})
		case inContext && m.Dir:
			var items []corev1.KeyToPath
			for _, it := range publicItems {
				if sub, ok := strings.CutPrefix(it.Path, rel+"/"); ok {
					items = append(items, corev1.KeyToPath{Key: it.Key, Path: sub})
				}
			}
			if len(items) == 0 {
				continue
			}
			ps.Volumes = append(ps.Volumes, corev1.Volume{Name: "claw-" + rel, VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: a.ID + "-context"}, Items: items},
			}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "claw-" + rel, MountPath: m.Target, ReadOnly: m.ReadOnly})
		case inContext:
			key := strings.ReplaceAll(rel, "/", ".")
			if _, ok := public[key]; !ok {
				return fmt.Errorf("kube: %s is mounted into agent %s but is no file it may read", m.Source, a.ID)
			}
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "claw-context", MountPath: m.Target, SubPath: key, ReadOnly: m.ReadOnly})
		default:
			return fmt.Errorf("kube: agent %s mounts %s, which has no rendering here", a.ID, m.Source)
		}
	}
	if err := checkVolumeNames(ps); err != nil {
		return r.errf(a.Service, "volumes", err.Error(), "rename the volume")
	}
	r.add("Deployment", a.ID, r.deployment(a.ID, objLabels, labels, selector, 1, ps, r.usesClaim(svc.Compose)))
	return nil
}

// service renders a pod service: a Deployment, or a StatefulSet when it
// keeps a named volume of its own, and its authored environment.
func (r *renderer) service(w *compile.Workload) error {
	name := w.Name
	sc := r.p.Services[name].Compose
	labels, selector := r.podLabels(RoleService, name, "")
	objLabels := map[string]string{LabelRole: RoleService, LabelService: name}
	env, envData, err := r.envVars(name, w.Env)
	if err != nil {
		return r.errf(name, "environment", err.Error(), "rename the variable")
	}
	if len(envData) > 0 {
		r.secret(name+"-env", objLabels, envData)
	}
	ps, err := r.podSpec(w, sc, env)
	if err != nil {
		return err
	}
	if err := checkVolumeNames(ps); err != nil {
		return r.errf(name, "volumes", err.Error(), "rename the volume")
	}
	replicas := int32(w.Replicas)
	templates := r.claimTemplates(name, sc)
	if len(templates) > 0 {
		r.add("StatefulSet", name, &appsv1.StatefulSet{
			TypeMeta:   typeMeta("apps/v1", "StatefulSet"),
			ObjectMeta: r.meta(name, objLabels),
			Spec: appsv1.StatefulSetSpec{
				Replicas:             &replicas,
				Selector:             &metav1.LabelSelector{MatchLabels: selector},
				ServiceName:          name,
				Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: ps},
				VolumeClaimTemplates: templates,
			},
		})
	} else {
		if replicas > 1 && r.usesClaim(sc) {
			r.warnf(name, "%d replicas share the claims of its named volumes: give them a ReadWriteMany storage class, or run one replica", replicas)
		}
		r.add("Deployment", name, r.deployment(name, objLabels, labels, selector, replicas, ps, r.usesClaim(sc)))
	}
	r.add("Service", name, r.kubeService(name, objLabels, selector, r.ports[name]))
	return nil
}

// deployment wraps a pod spec. A pod mounting a claim is replaced, not
// rolled: a ReadWriteOnce claim cannot be mounted by the next pod on
// another node while the old one holds it.
func (r *renderer) deployment(name string, objLabels, labels, selector map[string]string, replicas int32, ps corev1.PodSpec, claim bool) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: r.meta(name, objLabels),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: ps},
		},
	}
	if claim {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	return d
}

// kubeService is the Service giving a workload its compose name. Without
// declared ports it is headless: the name resolves to the pods, and any
// port answers, as on a compose network.
func (r *renderer) kubeService(name string, objLabels, selector map[string]string, ports []port) *corev1.Service {
	s := &corev1.Service{
		TypeMeta:   typeMeta("v1", "Service"),
		ObjectMeta: r.meta(name, objLabels),
		Spec:       corev1.ServiceSpec{Selector: selector},
	}
	if len(ports) == 0 {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		return s
	}
	for _, p := range ports {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: p.name(), Protocol: p.Protocol, Port: p.Number, TargetPort: intstr.FromInt32(p.Number)})
	}
	return s
}

// agentServices gives a Service to every agent another agent names as a
// surface: under the agent service's name (all its replicas) and, for a
// reach back to one replica, under the replica's id.
func (r *renderer) agentServices() error {
	names := map[string]bool{}
	for _, ar := range r.plan.Perimeter.Agents {
		for _, reach := range ar.Reaches {
			if reach.Agent {
				names[reach.Service] = true
			}
		}
	}
	for _, n := range sortedKeys(names) {
		if a, ok := r.agents[n]; ok && a.Index >= 0 {
			_, selector := r.podLabels(RoleAgent, a.Service, a.ID)
			r.add("Service", n, r.kubeService(n, map[string]string{LabelRole: RoleAgent, LabelService: a.Service, LabelAgent: a.ID}, selector, r.ports[a.Service]))
			continue
		}
		if !r.agentSvc[n] {
			return fmt.Errorf("kube: the perimeter names agent %q, which the pod does not run", n)
		}
		selector := map[string]string{LabelRole: RoleAgent, LabelService: n}
		r.add("Service", n, r.kubeService(n, map[string]string{LabelRole: RoleAgent, LabelService: n}, selector, r.ports[n]))
	}
	return nil
}

func stringData(m map[string][]byte) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
