// Package compile turns a loaded pod (internal/pod) and its services'
// descriptors (internal/capability) into the files cllama and Docker
// Compose consume: per-agent context under .claw-runtime/context/<agent-id>/,
// .claw-auth/providers.json and compose.generated.yml (spec 000 "compilation
// pipeline", 002 "What claw up Compiles", 003 "feeds.json").
//
// Build is pure apart from reading the pod directory (agent contracts,
// descriptors, skills, previous tokens) and, when Options.Images is set,
// local Docker images; it returns the whole output in memory. Output.Write
// puts it on disk. The same input gives byte-identical output except for
// agent tokens, which are fresh from crypto/rand on the first compile and
// then kept across recompiles.
//
// The pod is planned before any rendering, as data: Plan (plan.go) holds
// the workloads with their images and resolved environment, cllama, the
// secrets by reference, and Perimeter, which says what each agent reaches
// and why (spec 000 §2, "Topology"). The compose renderer (composegen.go)
// turns the plan into compose.generated.yml, over the compose model that
// carries the author's own keys through untouched, without deciding
// anything of its own; internal/kube renders the same plan as Kubernetes
// manifests.
package compile
