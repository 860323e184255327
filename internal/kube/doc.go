// Package kube renders a compiled pod (compile.Result) as Kubernetes
// manifests built from the k8s.io/api types: a Namespace named after the
// pod; a Deployment (or a StatefulSet, see below) and a Service per pod
// service; a Deployment per agent with its context mounted as compose
// mounts it; cllama as a Deployment with its Service, probes, context and
// history; and NetworkPolicies that render compile.Perimeter.
//
// It renders compile.Plan, the plan compose.generated.yml is rendered
// from too, and decides nothing about authority: who reaches whom comes
// from the plan's Perimeter (agents, cllama) and from the pod's own
// compose networks (services among themselves); the image, environment,
// mounts and health check of every workload and of cllama are the plan's.
// What it decides is where each value lives: a context file only cllama
// reads (tokens, tools.json and feeds.json, which carry service
// credentials, projected credentials; compile writes them 0600) and
// providers.json go into Secrets, the rest of an agent's context into a
// ConfigMap; an environment value the pod author wrote goes into a Secret
// (compose.generated.yml is 0600 for the same reason), a variable the plan
// marks as an agent's token reads that agent's own Secret, and only the
// values claw sets (ids, cllama's URLs, cllama's own settings) stay
// literal in the manifests.
//
// Workload kinds: every agent (each replica apart) is a Deployment of one
// pod, since its identity is its token, which a Deployment per agent keeps
// in one Secret only that agent's pod reads; cllama is a Deployment; a pod
// service is a StatefulSet when it mounts a named volume no other service
// mounts (its data is its identity: each replica keeps its own claim, and
// a rollout never runs two pods on one claim), else a Deployment.
//
// Output is deterministic: objects and keys are sorted, so an unchanged
// pod renders to identical bytes.
package kube
