package kube

// cllama and the Redis its replicas share: what the proxy needs to run on
// a cluster, kept apart from the rendering of the pod's own services.

import (
	"fmt"
	"math"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
)

// cllama renders the proxy: its Deployment, Service, provider Secret,
// authored settings, and history claim.
func (r *renderer) cllama(c *compile.CllamaPlan) error {
	labels, selector := r.podLabels(RoleCllama, compile.CllamaService, "")
	objLabels := map[string]string{LabelRole: RoleCllama, LabelService: compile.CllamaService}
	env, envData, err := r.envVars(compile.CllamaService, c.Env)
	if err != nil {
		return &pod.Error{File: r.p.File, Key: "x-claw.cllama-defaults.env", Problem: err.Error(), Fix: "rename the variable"}
	}
	if len(envData) > 0 {
		r.secret(compile.CllamaService+"-env", objLabels, envData)
	}
	providers, ok := r.files[compile.ProvidersFile]
	if !ok {
		return fmt.Errorf("kube: the compile result has no %s", compile.ProvidersFile)
	}
	auth := map[string][]byte{path.Base(compile.ProvidersFile): providers.Data}
	// The pod-wide settings and the operator token live beside it.
	for _, name := range []string{compile.PodSettingsFile, compile.OperatorTokenFile} {
		if f, ok := r.files[name]; ok {
			auth[path.Base(name)] = f.Data
		}
	}
	r.secret(CllamaProviders, objLabels, auth)

	// Each agent's credentials under /claw/context/<agent-id>/, from its
	// own Secret; only agents that use cllama are known to it.
	var sources []corev1.VolumeProjection
	for _, w := range r.plan.Workloads {
		if w.Agent == nil || !w.Agent.Cllama {
			continue
		}
		_, _, items, _, err := r.agentFiles(w)
		if err != nil {
			return err
		}
		for i := range items {
			items[i].Path = w.Name + "/" + items[i].Path
		}
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.Name + "-cllama"}, Items: items,
		}})
	}
	readable := int32(0o440)
	replicas := int32(c.Replicas)
	history := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: CllamaHistory}}
	if st := c.State; st != nil {
		history = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		// Continuity is shared in Redis, so a runner's next turn may land
		// on any replica; each names its history files after its pod.
		env = append(env, corev1.EnvVar{Name: "CLLAMA_REPLICA_ID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
		if !st.External {
			env = append(env, corev1.EnvVar{Name: "CLLAMA_STATE_URL", Value: st.URL})
			r.stateStore(st)
		}
		r.warns = append(r.warns, fmt.Sprintf("%s: x-claw.cllama-defaults.replicas: %d cllama pods share tool-loop continuity in Redis (%s, or CLLAMA_STATE_URL in cllama-defaults.env); each keeps its session history in its own emptyDir, lost when the pod goes: give them a ReadWriteMany claim to keep it", r.p.File, replicas, compile.StateService))
	} else {
		r.add("PersistentVolumeClaim", CllamaHistory, r.claim(CllamaHistory, objLabels))
	}
	if c.HealthSet {
		r.warns = append(r.warns, fmt.Sprintf("%s: x-claw.cllama-defaults.healthcheck: Kubernetes probes cllama's GET %s instead", r.p.File, c.Health.HTTPPath))
	}
	r.addImage(c.Image, compile.CllamaService, "")
	// The plan's health check over HTTP: ready once it answers, restarted
	// when it stops answering after its start period.
	h := c.Health
	probe := func(delay time.Duration) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: h.HTTPPath, Port: intOrName("http")}},
			InitialDelaySeconds: seconds(delay), PeriodSeconds: seconds(*h.Interval), TimeoutSeconds: seconds(*h.Timeout), FailureThreshold: int32(min(*h.Retries, math.MaxInt32)),
		}
	}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	for _, m := range c.Mounts {
		var v corev1.Volume
		switch m.Source {
		case compile.ContextDir:
			v = corev1.Volume{Name: "context", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: &readable}}}
		case compile.AuthDir:
			v = corev1.Volume{Name: "auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: CllamaProviders, DefaultMode: &readable}}}
		case compile.HistoryDir:
			v = corev1.Volume{Name: "history", VolumeSource: history}
		default:
			return fmt.Errorf("kube: cllama mounts %s, which has no rendering here", m.Source)
		}
		volumes = append(volumes, v)
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: m.Target, ReadOnly: m.ReadOnly})
	}
	no, yes := false, true
	uid := int64(cllamaUID)
	ps := corev1.PodSpec{
		AutomountServiceAccountToken: &no,
		EnableServiceLinks:           &no,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            compile.CllamaService,
			Image:           c.Image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Env:             env,
			Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: int32(c.Port), Protocol: corev1.ProtocolTCP}},
			ReadinessProbe:  probe(0),
			LivenessProbe:   probe(*h.StartPeriod),
			VolumeMounts:    mounts,
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no,
				ReadOnlyRootFilesystem:   &yes,
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
		Volumes: volumes,
	}
	r.add("Deployment", compile.CllamaService, r.deployment(compile.CllamaService, objLabels, labels, selector, replicas, ps, c.State == nil))
	r.add("Service", compile.CllamaService, r.kubeService(compile.CllamaService, objLabels, selector, []port{{Number: int32(c.Port), Protocol: corev1.ProtocolTCP}}))
	return nil
}

// seconds is a duration in whole seconds, as probes count them.
func seconds(d time.Duration) int32 { return int32(d / time.Second) }

// stateStore renders the Redis cllama replicas share: no persistence
// (continuity entries expire anyway; losing them costs the model a repeat
// of hidden calls), bounded memory. Under pressure the least recently used
// keys that expire go first (volatile-lru): continuity entries and owners
// of stored responses, never the continuity's ambiguity marks (a sorted
// set without a TTL, bounded by cllama), which keep a key two
// conversations claimed from being restored to either.
func (r *renderer) stateStore(st *compile.SharedState) {
	labels, selector := r.podLabels(RoleState, st.Service, "")
	objLabels := map[string]string{LabelRole: RoleState, LabelService: st.Service}
	no, yes := false, true
	uid := int64(999) // the image's redis user
	ps := corev1.PodSpec{
		AutomountServiceAccountToken: &no,
		EnableServiceLinks:           &no,
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{
			Name:            st.Service,
			Image:           st.Image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Args:            []string{"--save", "", "--appendonly", "no", "--maxmemory", "256mb", "--maxmemory-policy", "volatile-lru"},
			Ports:           []corev1.ContainerPort{{Name: "redis", ContainerPort: int32(st.Port), Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intOrName("redis")}},
				PeriodSeconds: 10, TimeoutSeconds: 3},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	r.add("Deployment", st.Service, r.deployment(st.Service, objLabels, labels, selector, 1, ps, false))
	r.add("Service", st.Service, r.kubeService(st.Service, objLabels, selector, []port{{Number: int32(st.Port), Protocol: corev1.ProtocolTCP}}))
	r.state = st
}
