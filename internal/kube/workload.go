package kube

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/clawdapus/clawgo/internal/compile"
)

// port is one port a compose service serves: a target of ports: or an
// entry of expose:.
type port struct {
	Number   int32
	Protocol corev1.Protocol
}

// name is the port's Service port name ("tcp-4000").
func (p port) name() string {
	return strings.ToLower(string(p.Protocol)) + "-" + strconv.Itoa(int(p.Number))
}

// maxPortRange bounds an expose range ("4000-4099") expanded into ports.
const maxPortRange = 100

// servicePorts lists the ports a compose service declares (expose entries
// and the container side of ports), sorted and without repeats.
func servicePorts(sc types.ServiceConfig) ([]port, error) {
	seen := map[port]bool{}
	var out []port
	add := func(p port) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, e := range sc.Expose {
		spec, protoName, _ := strings.Cut(e, "/")
		proto, err := protocol(protoName)
		if err != nil {
			return nil, fmt.Errorf("expose %q: %v", e, err)
		}
		lo, hi, isRange := strings.Cut(spec, "-")
		first, err := portNumber(lo)
		if err != nil {
			return nil, fmt.Errorf("expose %q: %v", e, err)
		}
		last := first
		if isRange {
			if last, err = portNumber(hi); err != nil {
				return nil, fmt.Errorf("expose %q: %v", e, err)
			}
			if last < first || last-first >= maxPortRange {
				return nil, fmt.Errorf("expose %q: a range of 1 to %d ports is rendered", e, maxPortRange)
			}
		}
		for n := first; n <= last; n++ {
			add(port{Number: n, Protocol: proto})
		}
	}
	for _, p := range sc.Ports {
		if p.Target == 0 {
			continue
		}
		proto, err := protocol(p.Protocol)
		if err != nil {
			return nil, fmt.Errorf("ports target %d: %v", p.Target, err)
		}
		if p.Target > math.MaxUint16 {
			return nil, fmt.Errorf("ports target %d: not a port number", p.Target)
		}
		add(port{Number: int32(p.Target), Protocol: proto})
	}
	slices.SortFunc(out, func(a, b port) int {
		if a.Number != b.Number {
			return int(a.Number - b.Number)
		}
		return strings.Compare(string(a.Protocol), string(b.Protocol))
	})
	return out, nil
}

func portNumber(s string) (int32, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 || n > math.MaxUint16 {
		return 0, fmt.Errorf("%q is not a port number", s)
	}
	return int32(n), nil
}

func protocol(s string) (corev1.Protocol, error) {
	switch strings.ToLower(s) {
	case "", "tcp":
		return corev1.ProtocolTCP, nil
	case "udp":
		return corev1.ProtocolUDP, nil
	case "sctp":
		return corev1.ProtocolSCTP, nil
	}
	return "", fmt.Errorf("protocol %q is not tcp, udp or sctp", s)
}

func intOrName(name string) intstr.IntOrString { return intstr.FromString(name) }

// podSpec renders a workload's container: what the plan says of it (its
// image, health check and env, already rendered) and the rest of its
// service's compose definition.
func (r *renderer) podSpec(w *compile.Workload, sc types.ServiceConfig, env []corev1.EnvVar) (corev1.PodSpec, error) {
	service, workload := w.Service, w.Name
	r.unrendered(service, sc)
	image, err := r.imageOf(w)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	c := corev1.Container{
		Name:            service,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string(sc.Entrypoint),
		Args:            []string(sc.Command),
		WorkingDir:      sc.WorkingDir,
		Env:             env,
		TTY:             sc.Tty,
		Stdin:           sc.StdinOpen,
		ReadinessProbe:  probe(w.HealthCheck),
		Resources:       resources(sc),
	}
	for _, p := range r.ports[service] {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: p.name(), ContainerPort: p.Number, Protocol: p.Protocol})
	}
	sec, err := r.securityContext(service, sc)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	c.SecurityContext = sec
	vols, mounts, err := r.volumes(service, workload, sc)
	if err != nil {
		return corev1.PodSpec{}, err
	}
	c.VolumeMounts = mounts
	no := false
	ps := corev1.PodSpec{
		// Nothing in a pod talks to the Kubernetes API, and service links
		// would add variables compose does not give (CLLAMA_PORT, …).
		AutomountServiceAccountToken: &no,
		EnableServiceLinks:           &no,
		Containers:                   []corev1.Container{c},
		Volumes:                      vols,
		HostAliases:                  r.hostAliases(service, sc),
	}
	if sc.StopGracePeriod != nil {
		s := int64(time.Duration(*sc.StopGracePeriod) / time.Second)
		ps.TerminationGracePeriodSeconds = &s
	}
	return ps, nil
}

// unrendered warns about compose settings with no rendering here.
func (r *renderer) unrendered(service string, sc types.ServiceConfig) {
	var keys []string
	for key, set := range map[string]bool{
		"network_mode": sc.NetworkMode != "",
		"dns":          len(sc.DNS) > 0 || len(sc.DNSSearch) > 0 || len(sc.DNSOpts) > 0,
		"secrets":      len(sc.Secrets) > 0,
		"configs":      len(sc.Configs) > 0,
		"devices":      len(sc.Devices) > 0,
		"pid":          sc.Pid != "",
		"ipc":          sc.Ipc != "",
		"sysctls":      len(sc.Sysctls) > 0,
		"ulimits":      len(sc.Ulimits) > 0,
		"security_opt": len(sc.SecurityOpt) > 0,
	} {
		if set {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		r.warnf(service, "%s has no Kubernetes rendering here; it is left out", k)
	}
	var published []string
	for _, p := range sc.Ports {
		if p.Published != "" {
			published = append(published, p.Published+"->"+strconv.Itoa(int(p.Target)))
		}
	}
	if len(published) > 0 {
		r.warnf(service, "ports published on the host (%s) are cluster-internal Service ports here; reach them with kubectl port-forward, or add an Ingress and a NetworkPolicy admitting it", strings.Join(published, ", "))
	}
}

// probe renders a workload's health check as a readiness probe (compose
// restarts nothing on it either). Compose's defaults: every 30 s, 30 s
// timeout, 3 retries.
func probe(hc *compile.HealthCheck) *corev1.Probe {
	if hc == nil || len(hc.Test) == 0 {
		return nil
	}
	var cmd []string
	switch hc.Test[0] {
	case "CMD":
		cmd = hc.Test[1:]
	case "CMD-SHELL":
		cmd = append([]string{"/bin/sh", "-c"}, strings.Join(hc.Test[1:], " "))
	default:
		return nil // NONE
	}
	if len(cmd) == 0 {
		return nil
	}
	secs := func(d *time.Duration, def int32) int32 {
		if d == nil {
			return def
		}
		return max(int32(*d/time.Second), 1)
	}
	p := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}},
		PeriodSeconds:    secs(hc.Interval, 30),
		TimeoutSeconds:   secs(hc.Timeout, 30),
		FailureThreshold: 3,
	}
	if hc.StartPeriod != nil {
		p.InitialDelaySeconds = int32(*hc.StartPeriod / time.Second)
	}
	if hc.Retries != nil && *hc.Retries > 0 {
		p.FailureThreshold = int32(min(*hc.Retries, math.MaxInt32))
	}
	return p
}

// resources renders cpus and memory limits and reservations.
func resources(sc types.ServiceConfig) corev1.ResourceRequirements {
	var rr corev1.ResourceRequirements
	set := func(list *corev1.ResourceList, cpus float32, mem types.UnitBytes) {
		if cpus <= 0 && mem <= 0 {
			return
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		if cpus > 0 {
			(*list)[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(math.Round(float64(cpus)*1000)), resource.DecimalSI)
		}
		if mem > 0 {
			(*list)[corev1.ResourceMemory] = *resource.NewQuantity(int64(mem), resource.BinarySI)
		}
	}
	set(&rr.Limits, sc.CPUS, sc.MemLimit)
	set(&rr.Requests, 0, sc.MemReservation)
	if sc.Deploy != nil {
		if l := sc.Deploy.Resources.Limits; l != nil {
			set(&rr.Limits, float32(l.NanoCPUs), l.MemoryBytes)
		}
		if res := sc.Deploy.Resources.Reservations; res != nil {
			set(&rr.Requests, float32(res.NanoCPUs), res.MemoryBytes)
		}
	}
	return rr
}

// securityContext renders user, read_only, privileged and capabilities.
func (r *renderer) securityContext(service string, sc types.ServiceConfig) (*corev1.SecurityContext, error) {
	s := &corev1.SecurityContext{}
	set := false
	if sc.User != "" {
		u, g, hasGroup := strings.Cut(sc.User, ":")
		uid, err := strconv.ParseInt(u, 10, 64)
		var gid int64
		if err == nil && hasGroup {
			gid, err = strconv.ParseInt(g, 10, 64)
		}
		if err != nil {
			r.warnf(service, "user %q is not numeric: Kubernetes runs the image's user (write user: UID[:GID])", sc.User)
		} else {
			s.RunAsUser, set = &uid, true
			if hasGroup {
				s.RunAsGroup = &gid
			}
		}
	}
	if sc.ReadOnly {
		ro := true
		s.ReadOnlyRootFilesystem, set = &ro, true
	}
	if sc.Privileged {
		p := true
		s.Privileged, set = &p, true
	}
	if len(sc.CapAdd) > 0 || len(sc.CapDrop) > 0 {
		s.Capabilities, set = &corev1.Capabilities{}, true
		for _, c := range sc.CapAdd {
			s.Capabilities.Add = append(s.Capabilities.Add, corev1.Capability(strings.TrimPrefix(strings.ToUpper(c), "CAP_")))
		}
		for _, c := range sc.CapDrop {
			s.Capabilities.Drop = append(s.Capabilities.Drop, corev1.Capability(strings.TrimPrefix(strings.ToUpper(c), "CAP_")))
		}
		slices.Sort(s.Capabilities.Add)
		slices.Sort(s.Capabilities.Drop)
	}
	if !set {
		return nil, nil
	}
	return s, nil
}

// hostAliases renders extra_hosts with an address.
func (r *renderer) hostAliases(service string, sc types.ServiceConfig) []corev1.HostAlias {
	byIP := map[string][]string{}
	for _, host := range sortedKeys(sc.ExtraHosts) {
		for _, ip := range sc.ExtraHosts[host] {
			if ip == "host-gateway" {
				r.warnf(service, "extra_hosts %s:host-gateway has no Kubernetes rendering; it is left out", host)
				continue
			}
			byIP[ip] = append(byIP[ip], host)
		}
	}
	var out []corev1.HostAlias
	for _, ip := range sortedKeys(byIP) {
		out = append(out, corev1.HostAlias{IP: ip, Hostnames: byIP[ip]})
	}
	return out
}

// volumes renders a service's mounts: a named volume is a claim (a
// template of the service's StatefulSet when no other service mounts it,
// see claimTemplates; else the claim of that name), tmpfs and anonymous
// volumes are emptyDirs, and a file of the pod directory bind-mounted
// read-only is a key of the workload's "<workload>-files" Secret (a
// Secret, since nothing says what the file holds). Other bind mounts of
// the host have no rendering.
func (r *renderer) volumes(service, workload string, sc types.ServiceConfig) ([]corev1.Volume, []corev1.VolumeMount, error) {
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	private := r.privateVolumes(service, sc)
	files := map[string][]byte{}
	for i, v := range sc.Volumes {
		switch v.Type {
		case types.VolumeTypeVolume:
			if v.Source == "" {
				name := fmt.Sprintf("anonymous-%d", i)
				vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
				mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: v.Target, ReadOnly: v.ReadOnly})
				continue
			}
			name, err := volumeName(v.Source)
			if err != nil {
				return nil, nil, r.errf(service, "volumes", err.Error(), "name volumes with lowercase letters, digits and '-'")
			}
			if !slices.Contains(private, v.Source) && !slices.ContainsFunc(vols, func(x corev1.Volume) bool { return x.Name == name }) {
				vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: r.claimName(v.Source), ReadOnly: v.ReadOnly},
				}})
			}
			subPath := ""
			if v.Volume != nil {
				subPath = v.Volume.Subpath
			}
			mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: v.Target, ReadOnly: v.ReadOnly, SubPath: subPath})
		case types.VolumeTypeTmpfs:
			name := fmt.Sprintf("tmpfs-%d", i)
			ed := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
			if v.Tmpfs != nil && v.Tmpfs.Size > 0 {
				q := resource.NewQuantity(int64(v.Tmpfs.Size), resource.BinarySI)
				ed.SizeLimit = q
			}
			vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: ed}})
			mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: v.Target})
		case types.VolumeTypeBind:
			src := v.Source
			rel, err := filepath.Rel(r.p.Dir, src)
			inPod := err == nil && filepath.IsAbs(src) && rel != "." && !strings.HasPrefix(rel, "..")
			if inPod {
				src = "./" + filepath.ToSlash(rel)
			}
			if data, ok := podFile(v.Source); ok && inPod && v.ReadOnly {
				key := strings.ReplaceAll(filepath.ToSlash(rel), "/", ".")
				if len(validation.IsConfigMapKey(key)) == 0 {
					files[key] = data
					mounts = append(mounts, corev1.VolumeMount{Name: "pod-files", MountPath: v.Target, SubPath: key, ReadOnly: true})
					continue
				}
			}
			r.warnf(service, "volume %s:%s mounts the host's files, which a cluster does not have; it is left out (only a file of the pod directory mounted read-only is rendered: bake the rest into the image)", src, v.Target)
		default:
			r.warnf(service, "volume %s:%s of type %s has no Kubernetes rendering here; it is left out", v.Source, v.Target, v.Type)
		}
	}
	for i, t := range sc.Tmpfs {
		target, _, _ := strings.Cut(t, ":")
		name := fmt.Sprintf("tmpfs-x%d", i)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: target})
	}
	if len(files) > 0 {
		labels := map[string]string{LabelRole: RoleService, LabelService: service}
		if workload != service || r.p.Services[service].IsAgent() {
			labels = map[string]string{LabelRole: RoleAgent, LabelService: service, LabelAgent: workload}
		}
		r.secret(workload+"-files", labels, files)
		vols = append(vols, corev1.Volume{Name: "pod-files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: workload + "-files"}}})
	}
	return vols, mounts, nil
}

// maxPodFile bounds a bind-mounted file rendered into a Secret (a Secret
// holds at most 1 MiB).
const maxPodFile = 512 << 10

// podFile reads a regular file of at most maxPodFile bytes.
func podFile(name string) ([]byte, bool) {
	st, err := os.Stat(name)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxPodFile {
		return nil, false
	}
	data, err := os.ReadFile(name)
	return data, err == nil
}

// privateVolumes are the named volumes of a pod service that no other
// service mounts and that the pod creates: they become claim templates of
// its StatefulSet. Agents keep plain claims (each agent is one pod).
func (r *renderer) privateVolumes(service string, sc types.ServiceConfig) []string {
	if r.p.Services[service].IsAgent() {
		return nil
	}
	var out []string
	for _, v := range sc.Volumes {
		if v.Type != types.VolumeTypeVolume || v.Source == "" || slices.Contains(out, v.Source) {
			continue
		}
		if len(r.volumeUsers[v.Source]) == 1 && !r.external(v.Source) {
			out = append(out, v.Source)
		}
	}
	return out
}

func (r *renderer) external(volume string) bool {
	vc, ok := r.p.Project.Volumes[volume]
	return ok && bool(vc.External)
}

// claimName is the claim of a shared or external named volume: the
// volume's own name when external (it must exist), else its Kubernetes
// form.
func (r *renderer) claimName(volume string) string {
	if r.external(volume) {
		if vc := r.p.Project.Volumes[volume]; vc.Name != "" {
			return vc.Name
		}
		return volume
	}
	name, _ := volumeName(volume)
	return name
}

// usesClaim reports whether a service mounts a claim outside claim
// templates.
func (r *renderer) usesClaim(sc types.ServiceConfig) bool {
	for _, v := range sc.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Source != "" {
			if !slices.Contains(r.privateVolumes(sc.Name, sc), v.Source) {
				return true
			}
		}
	}
	return false
}

// volumeName is a compose volume name as a Kubernetes name: lowercase,
// other characters as '-'.
func volumeName(v string) (string, error) {
	n := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			return c
		case c >= 'A' && c <= 'Z':
			return c - 'A' + 'a'
		}
		return '-'
	}, v)
	n = strings.Trim(n, "-")
	if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
		return "", fmt.Errorf("volume %q has no Kubernetes name: %s", v, strings.Join(errs, "; "))
	}
	return n, nil
}

// claim is a ReadWriteOnce claim of HistorySize.
func (r *renderer) claim(name string, labels map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   typeMeta("v1", "PersistentVolumeClaim"),
		ObjectMeta: r.meta(name, labels),
		Spec:       claimSpec(),
	}
}

func claimSpec() corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(HistorySize)}},
	}
}

// claimTemplates are the claim templates of a service's private volumes.
func (r *renderer) claimTemplates(service string, sc types.ServiceConfig) []corev1.PersistentVolumeClaim {
	var out []corev1.PersistentVolumeClaim
	for _, v := range r.privateVolumes(service, sc) {
		name, _ := volumeName(v)
		out = append(out, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelPod: r.ns, LabelRole: RoleService, LabelService: service}},
			Spec:       claimSpec(),
		})
	}
	return out
}

// volumeClaims adds a claim for every named volume that is not a claim
// template: shared by several services, or mounted by an agent. External
// volumes are claims that must exist already.
func (r *renderer) volumeClaims() error {
	for _, v := range sortedKeys(r.volumeUsers) {
		users := r.volumeUsers[v]
		shared := len(users) > 1 || r.p.Services[users[0]].IsAgent()
		if !shared {
			continue
		}
		if r.external(v) {
			r.warns = append(r.warns, fmt.Sprintf("%s: volume %q is external: the claim %q must exist in the namespace", r.p.File, v, r.claimName(v)))
			continue
		}
		name, err := volumeName(v)
		if err != nil {
			return r.errf(users[0], "volumes", err.Error(), "name volumes with lowercase letters, digits and '-'")
		}
		if svc := r.p.Services[users[0]]; len(users) > 1 || len(compile.AgentIDs(svc)) > 1 && svc.IsAgent() {
			r.warns = append(r.warns, fmt.Sprintf("%s: volume %q is mounted by several pods (%s): its claim needs a ReadWriteMany storage class, or the pods on one node", r.p.File, v, strings.Join(users, ", ")))
		}
		r.add("PersistentVolumeClaim", name, r.claim(name, map[string]string{"claw.volume": name}))
	}
	for _, v := range sortedKeys(r.volumeUsers) {
		users := r.volumeUsers[v]
		if len(users) == 1 && !r.p.Services[users[0]].IsAgent() && r.external(v) {
			r.warns = append(r.warns, fmt.Sprintf("%s: volume %q is external: the claim %q must exist in the namespace", r.p.File, v, r.claimName(v)))
		}
	}
	return nil
}

// checkVolumeNames refuses two volumes of one pod with the same name.
func checkVolumeNames(ps corev1.PodSpec) error {
	seen := map[string]bool{}
	for _, v := range ps.Volumes {
		if seen[v.Name] {
			return fmt.Errorf("two volumes are named %q", v.Name)
		}
		seen[v.Name] = true
	}
	return nil
}
