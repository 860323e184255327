package kube

// cllama and the Redis its replicas share: what the proxy needs to run on
// a cluster, kept apart from the rendering of the pod's own services.

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
)

// cllama renders the proxy: its Deployment, Service, provider Secret,
// authored settings, and history claim.
func (r *renderer) cllama() error {
	cd := r.p.Claw.CllamaDefaults
	labels, selector := r.podLabels(RoleCllama, compile.CllamaService, "")
	objLabels := map[string]string{LabelRole: RoleCllama, LabelService: compile.CllamaService}
	authored := map[string]bool{}
	for k := range cd.Env {
		authored[k] = true
	}
	env, envData, err := envVars(compile.CllamaService, r.environment(compile.CllamaService), authored, "")
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
	r.secret(CllamaProviders, objLabels, map[string][]byte{path.Base(compile.ProvidersFile): providers.Data})

	// Each agent's credentials under /claw/context/<agent-id>/, from its
	// own Secret; only agents that use cllama are known to it.
	var sources []corev1.VolumeProjection
	for _, a := range r.res.Agents {
		if !a.Cllama {
			continue
		}
		_, _, items, _, err := r.agentFiles(a.ID)
		if err != nil {
			return err
		}
		for i := range items {
			items[i].Path = a.ID + "/" + items[i].Path
		}
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: a.ID + "-cllama"}, Items: items,
		}})
	}
	readable := int32(0o440)
	replicas := int32(1)
	if cd.Replicas > 0 {
		replicas = int32(cd.Replicas)
	}
	history := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: CllamaHistory}}
	if replicas > 1 {
		history = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		// Continuity is shared in Redis, so a runner's next turn may land
		// on any replica; each names its history files after its pod.
		env = append(env, corev1.EnvVar{Name: "CLLAMA_REPLICA_ID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
		if !authored["CLLAMA_STATE_URL"] {
			env = append(env, corev1.EnvVar{Name: "CLLAMA_STATE_URL", Value: fmt.Sprintf("redis://%s:%d/0", RoleState, statePort)})
			r.stateStore()
		}
		r.warns = append(r.warns, fmt.Sprintf("%s: x-claw.cllama-defaults.replicas: %d cllama pods share tool-loop continuity in Redis (%s, or CLLAMA_STATE_URL in cllama-defaults.env); each keeps its session history in its own emptyDir, lost when the pod goes: give them a ReadWriteMany claim to keep it", r.p.File, replicas, RoleState))
	} else {
		r.add("PersistentVolumeClaim", CllamaHistory, r.claim(CllamaHistory, objLabels))
	}
	if cd.HealthcheckOff || cd.Healthcheck != nil {
		r.warns = append(r.warns, fmt.Sprintf("%s: x-claw.cllama-defaults.healthcheck: Kubernetes probes cllama's GET /health instead", r.p.File))
	}
	image := r.gen[compile.CllamaService].Image
	r.addImage(image, compile.CllamaService, "")
	probe := func(delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intOrName("http")}},
			InitialDelaySeconds: delay, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3,
		}
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
			Image:           image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Env:             env,
			Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: compile.CllamaPort, Protocol: corev1.ProtocolTCP}},
			ReadinessProbe:  probe(0),
			LivenessProbe:   probe(5),
			VolumeMounts: []corev1.VolumeMount{
				{Name: "context", MountPath: cllamaContextDir, ReadOnly: true},
				{Name: "auth", MountPath: cllamaAuthDir, ReadOnly: true},
				{Name: "history", MountPath: cllamaHistoryDir},
			},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no,
				ReadOnlyRootFilesystem:   &yes,
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "context", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: &readable}}},
			{Name: "auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: CllamaProviders, DefaultMode: &readable}}},
			{Name: "history", VolumeSource: history},
		},
	}
	r.add("Deployment", compile.CllamaService, r.deployment(compile.CllamaService, objLabels, labels, selector, replicas, ps, replicas == 1))
	r.add("Service", compile.CllamaService, r.kubeService(compile.CllamaService, objLabels, selector, []port{{Number: compile.CllamaPort, Protocol: corev1.ProtocolTCP}}))
	return nil
}

// statePort is Redis's port.
const statePort = 6379

// StateImage is the Redis image the shared state runs from (the official
// image, pulled by the cluster from its registry).
const StateImage = "redis:7-alpine"

// stateStore renders the Redis cllama replicas share: no persistence
// (continuity entries expire anyway; losing them costs the model a repeat
// of hidden calls), bounded memory. Under pressure the least recently used
// keys that expire go first (volatile-lru): continuity entries and owners
// of stored responses, never the continuity's ambiguity marks (a sorted
// set without a TTL, bounded by cllama), which keep a key two
// conversations claimed from being restored to either.
func (r *renderer) stateStore() {
	labels, selector := r.podLabels(RoleState, RoleState, "")
	objLabels := map[string]string{LabelRole: RoleState, LabelService: RoleState}
	no, yes := false, true
	uid := int64(999) // the image's redis user
	ps := corev1.PodSpec{
		AutomountServiceAccountToken: &no,
		EnableServiceLinks:           &no,
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{
			Name:            RoleState,
			Image:           StateImage,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Args:            []string{"--save", "", "--appendonly", "no", "--maxmemory", "256mb", "--maxmemory-policy", "volatile-lru"},
			Ports:           []corev1.ContainerPort{{Name: "redis", ContainerPort: statePort, Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intOrName("redis")}},
				PeriodSeconds: 10, TimeoutSeconds: 3},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	r.add("Deployment", RoleState, r.deployment(RoleState, objLabels, labels, selector, 1, ps, false))
	r.add("Service", RoleState, r.kubeService(RoleState, objLabels, selector, []port{{Number: statePort, Protocol: corev1.ProtocolTCP}}))
	r.withState = true
}
