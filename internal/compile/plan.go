package compile

import (
	"slices"
	"time"
)

// Plan is the compiled pod as every target renders it, built once by Build
// before any rendering: the workloads the pod runs, each with its image and
// the environment it finally gets (what governance adds included), cllama,
// who reaches whom (Perimeter), and where every credential comes from and
// where compile puts it (Secrets). compose.generated.yml (composegen.go)
// and the Kubernetes manifests (internal/kube) are renderers of it: each
// decides how to say the plan in its format, never what the plan says.
//
// What the pod author wrote in compose terms and governance does not
// change (entrypoint, command, ports, volumes, the author's own networks,
// resources, ...) is not repeated here: it is Pod.Services[name].Compose,
// which compose passes through untouched.
type Plan struct {
	// Pod is the pod name.
	Pod string
	// Workloads are the containers the pod runs besides cllama: every
	// service that is not an agent under its own name, and every agent
	// (each replica apart) under its id, in the order of the pod's service
	// names (replicas in index order).
	Workloads []*Workload
	// Cllama is the governance proxy; nil when no agent uses it.
	Cllama *CllamaPlan
	// Perimeter is who may reach whom.
	Perimeter *Perimeter
	// Secrets are the pod's credentials, by reference, sorted by ID.
	Secrets []Secret
}

// Workload is one container definition of the pod.
type Workload struct {
	// Name is its name in every target: the service of
	// compose.generated.yml, the Kubernetes workload.
	Name string
	// Service is the pod service it runs from: Name, but for an agent
	// replica ("<service>-<i>").
	Service string
	// Agent is the agent it runs; nil for a service that is no agent.
	Agent *Agent
	// Image is the image it runs: its image:, else for a service that
	// builds one without naming it the name Compose v2 tags the build
	// with, <project>-<service> (ProjectName of the pod); empty with
	// neither.
	Image string
	// ComposeV1Image is, for a service that builds its image without
	// naming it, the name docker-compose 1.x tags the build with instead:
	// <project>_<service>. Empty otherwise.
	ComposeV1Image string
	// Build is the build context of a service that builds its image,
	// relative to the pod directory ("./api", "."); empty otherwise.
	Build string
	// Env is its environment as finally resolved, sorted by name.
	Env []EnvVar
	// Replicas is how many copies of it run: deploy.replicas, else scale,
	// else 1. An agent's replicas are workloads of their own, one each.
	Replicas int
	// HealthCheck is its own health check; nil when it has none or
	// disables it.
	HealthCheck *HealthCheck
	// Context are the files of an agent's context directory
	// (ContextDir/<id>/), sorted by path.
	Context []ContextFile
	// Mounts are what claw mounts into an agent's container, in order:
	// its contract, its pod view, its skills and, with native tools, its
	// MCP client configuration.
	Mounts []Mount
}

// EnvVar is one variable of a container's environment.
type EnvVar struct {
	Name string
	// Value is what the container gets: interpolated, with no escape of
	// any target's.
	Value string
	// Unset is a variable the pod names without a value: compose takes it
	// from the shell that runs it.
	Unset bool
	// Authored is a variable the pod author wrote (the service's
	// environment or env_file, x-claw.cllama-defaults.env), even when claw
	// sets its value; every other variable is claw's (ids, cllama's URLs
	// and settings, the agent's token).
	Authored bool
	// Secret is the ID of the Secret the value is, or "".
	Secret string
}

// ContextFile is one file of an agent's context directory.
type ContextFile struct {
	// Path is relative to the pod directory.
	Path string
	// Secret is a file only cllama reads (compile writes it 0600: the
	// token, the agent's tools and feeds with their service credentials,
	// service-auth/); the agent's mounts are among the others.
	Secret bool
}

// Mount is a file or directory of the compiled pod mounted into a
// container.
type Mount struct {
	// Source is relative to the pod directory; Target is in the container.
	Source, Target string
	ReadOnly       bool
	// Dir is a directory (an agent's skills, cllama's context).
	Dir bool
	// Secret is a file holding a credential (an agent's MCP client
	// configuration, which carries its token).
	Secret bool
}

// HealthCheck is how a workload's health is checked.
type HealthCheck struct {
	// Test is the check in compose's form: ["CMD", arg...] or
	// ["CMD-SHELL", command]. For cllama, nil when the pod turns it off.
	Test []string
	// HTTPPath, when set, is the path a GET on the workload's port answers
	// health on (cllama's /health); a target probing over HTTP uses it.
	HTTPPath string
	// Interval, Timeout, StartPeriod and Retries are nil when left to the
	// target's defaults.
	Interval, Timeout, StartPeriod *time.Duration
	Retries                        *uint64
}

// CllamaPlan is the governance proxy.
type CllamaPlan struct {
	Image string
	// Env is its environment, sorted by name. Provider keys are never in
	// it: cllama reads them from ProvidersFile.
	Env []EnvVar
	// Port is where agents reach it (CllamaPort).
	Port int
	// Publish are the ports published on the host (claw up
	// --publish-cllama, --publish-metrics).
	Publish []Published
	// Replicas is x-claw.cllama-defaults.replicas (default 1).
	Replicas int
	// Health is its health check: GET /health on Port (HTTPPath), which
	// Test probes with cllama's own binary (its image has no curl).
	Health HealthCheck
	// HealthSet says x-claw.cllama-defaults.healthcheck replaced Test or
	// turned it off.
	HealthSet bool
	// StopGrace is how long it is given to stop: its drain
	// (CLLAMA_SHUTDOWN_TIMEOUT) and a margin.
	StopGrace time.Duration
	// Mounts are every agent's context and the providers (read-only), and
	// the history it writes.
	Mounts []Mount
	// State is where replicas share tool-loop continuity; nil with one.
	State *SharedState
}

// Published is a port published on the host at Host ("<ip>:<port>").
type Published struct {
	Host string
	Port int
}

// SharedState is the store cllama replicas share continuity in.
type SharedState struct {
	// External is a store x-claw.cllama-defaults.env names
	// (CLLAMA_STATE_URL, an authored variable of Env): none is run.
	External bool
	// Service, Image and Port are the Redis run otherwise, URL how cllama
	// reaches it.
	Service string
	Image   string
	Port    int
	URL     string
}

// The Redis cllama replicas share when the pod names none.
const (
	StateService = "cllama-state"
	// StateImage is the official image, pulled from Docker Hub.
	StateImage = "redis:7-alpine"
	StatePort  = 6379
)

// SecretKind says what a credential is.
type SecretKind string

// Kinds of Secret.
const (
	// SecretAgentToken is an agent's token: its identity to cllama.
	SecretAgentToken SecretKind = "agent-token"
	// SecretProviderKey is a model provider's key, which only cllama holds.
	SecretProviderKey SecretKind = "provider-key"
	// SecretServiceCredential is a bearer cllama presents to a service on
	// agents' behalf (their tools and feeds).
	SecretServiceCredential SecretKind = "service-credential"
)

// Secret is one credential of the pod, by reference: where its value comes
// from and where compile puts it, never the value itself.
type Secret struct {
	// ID names it: TokenSecretID(agent) for a token, else From.
	ID   string
	Kind SecretKind
	// From is where the value comes from: empty for a token (claw makes
	// it, and keeps it across recompiles), else the pod file's key holding
	// it, e.g. x-claw.cllama-defaults.env.OPENAI_API_KEY,
	// services.trading-api.environment.TRADING_API_TOKEN or
	// services.executor.x-claw.service-auth.trading-api.
	From string
	// Agent is the agent whose token it is.
	Agent string
	// Provider is the provider whose key it is.
	Provider string
	// Service is the service a credential authenticates to, Agents the
	// agents whose calls carry it (sorted).
	Service string
	Agents  []string
	// Files are the compiled files holding it, relative to the pod
	// directory, sorted.
	Files []string
	// Env are the variables holding it, sorted.
	Env []EnvRef
}

// EnvRef names one variable of one workload (CllamaService for cllama).
type EnvRef struct {
	Workload, Name string
}

// TokenSecretID is the ID of agent id's token in Plan.Secrets.
func TokenSecretID(id string) string { return "token:" + id }

// Workload returns the workload of that name, or nil.
func (p *Plan) Workload(name string) *Workload {
	i := slices.IndexFunc(p.Workloads, func(w *Workload) bool { return w.Name == name })
	if i < 0 {
		return nil
	}
	return p.Workloads[i]
}

// Secret returns the secret of that ID, or nil.
func (p *Plan) Secret(id string) *Secret {
	i := slices.IndexFunc(p.Secrets, func(s Secret) bool { return s.ID == id })
	if i < 0 {
		return nil
	}
	return &p.Secrets[i]
}

// Var returns the variable of that name, or nil.
func Var(env []EnvVar, name string) *EnvVar {
	i := slices.IndexFunc(env, func(e EnvVar) bool { return e.Name == name })
	if i < 0 {
		return nil
	}
	return &env[i]
}
