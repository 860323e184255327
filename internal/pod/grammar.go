package pod

import "github.com/clawdapus/clawgo/internal/manifest"

// Claw is the pod-level x-claw block.
type Claw struct {
	// Name is x-claw.pod; empty when absent (Pod.Name then falls back to the
	// compose project name).
	Name           string
	CllamaDefaults CllamaDefaults
	// ToolsDefaults is tools-defaults; HasToolsDefaults tells an empty list
	// from an absent one (`...` without defaults is an error).
	ToolsDefaults    []GrantEntry
	HasToolsDefaults bool
	// ToolsMode is x-claw.tools-mode: the mode of grant entries that write
	// no mode: of their own (manifest.ModeMediated or ModeNative); empty
	// when absent, which reads as mediated.
	ToolsMode        string
	FeedsDefaults    []FeedEntry
	HasFeedsDefaults bool
	// ToolPolicy is the pod-wide tool-policy; services override per key.
	ToolPolicy PolicySpec
	// RunnerEnv is x-claw.runner-env: more variables every cllama agent
	// gets, each pointing at cllama (see RunnerEnvValue). Agents add to it
	// and override it by name.
	RunnerEnv map[string]RunnerEnvValue
	// Alerts is x-claw.alerts: the webhook cllama sends operator events
	// to (approvals waiting, budgets, provider keys); nil when absent.
	Alerts *manifest.Alerts
}

// RunnerEnvValue is what a runner-env variable carries.
type RunnerEnvValue string

// The values a runner-env variable can carry.
const (
	// RunnerEnvOpenAIBaseURL is cllama's OpenAI-format base URL
	// (http://cllama:8080/v1).
	RunnerEnvOpenAIBaseURL RunnerEnvValue = "openai-base-url"
	// RunnerEnvAnthropicBaseURL is cllama's Anthropic-format base URL
	// (http://cllama:8080): the SDKs append /v1/messages.
	RunnerEnvAnthropicBaseURL RunnerEnvValue = "anthropic-base-url"
	// RunnerEnvToken is the agent's own cllama token.
	RunnerEnvToken RunnerEnvValue = "token"
)

// RunnerEnvValues lists every RunnerEnvValue, for errors and docs.
var RunnerEnvValues = []RunnerEnvValue{RunnerEnvOpenAIBaseURL, RunnerEnvAnthropicBaseURL, RunnerEnvToken}

// CllamaDefaults is x-claw.cllama-defaults: the proxy's settings.
type CllamaDefaults struct {
	// Env holds provider keys (OPENAI_API_KEY, …), provider base URL
	// overrides (OPENAI_BASE_URL, …) and proxy settings, after
	// interpolation. Provider keys go to .claw-auth/providers.json; all of
	// Env is given to the cllama container.
	Env map[string]string
	// Image overrides the cllama image.
	Image string
	// Healthcheck is the proxy's health check command in compose's exec
	// form (["CMD", …]); nil takes the default, HealthcheckOff disables it.
	Healthcheck    []string
	HealthcheckOff bool
	// DefaultProvider is default-provider: the provider of model names
	// written without a "<provider>/" prefix on endpoints whose format has
	// no provider of its own (cllama's CLLAMA_DEFAULT_PROVIDER). It must
	// name a provider the pod configures.
	DefaultProvider string
	// Models is models: the pod's default model allow-list, for agents
	// that declare none (entries as written; claw checks and normalises
	// them to "<provider>/<model>").
	Models []string
	// Replicas is replicas: how many cllama pods the Kubernetes target
	// runs (0 when not written: one). Compose runs one cllama.
	Replicas int
}

// ServiceClaw is a service-level x-claw block.
type ServiceClaw struct {
	// Agent is the path (relative to the pod file) of the agent's contract,
	// a file or a directory holding AGENTS.md.
	Agent string
	// Type is the runner type recorded in metadata.json (default "generic").
	Type string
	// Cllama lists the proxy types (for example "passthrough"); non-empty
	// means the agent's model traffic goes through cllama.
	Cllama   []string
	Surfaces []Surface
	// Tools is the service's grant list before defaults expansion;
	// HasTools tells "declared empty" from "absent" (absent inherits
	// tools-defaults).
	Tools    []GrantEntry
	HasTools bool
	Feeds    []FeedEntry
	HasFeeds bool
	// ToolPolicy overrides the pod's tool-policy per key.
	ToolPolicy   PolicySpec
	DescribeFile string
	// Count is the number of agents run from this service (default 1).
	Count int
	// MCPStdio marks a service wrapping a stdio MCP server; such services
	// cannot be agents.
	MCPStdio *MCPStdio
	// ToolAnnotations (x-claw.tool-annotations) override annotations of
	// this service's tools, by tool name: the way to mark a discovered
	// MCP tool parallel-safe.
	ToolAnnotations map[string]ToolAnnotations
	// ServiceAuth are credentials projected for this agent, keyed by the
	// target service; they win over the target descriptor's auth.env.
	ServiceAuth map[string]ServiceAuthSpec
	// Egress is x-claw.egress: the agent may also reach the outside
	// directly (not through cllama). Off by default: an agent reaches
	// cllama and its surfaces only (spec 000 §2, "Topology").
	Egress bool
	// RunnerEnv is x-claw.runner-env: variables added to the pod's
	// runner-env for this agent.
	RunnerEnv map[string]RunnerEnvValue
	// ToolManifests are x-claw.tool-manifests: paths (relative to the pod
	// file) of CKP `kind: Tool` manifests (spec 001) for tools this service
	// provides. They add to, and by name override, the service's
	// descriptor tools; such services cannot be agents.
	ToolManifests []string
	// Models is x-claw.models: the agent's model allow-list (entries as
	// written). Empty inherits x-claw.cllama-defaults.models; no list at
	// all means any model of the configured providers.
	Models []string
}

// CllamaEnabled reports whether the service's model traffic goes through
// cllama.
func (c *ServiceClaw) CllamaEnabled() bool { return c != nil && len(c.Cllama) > 0 }

// IsAgent reports whether the service is an agent (declares an agent
// contract or a cllama proxy).
func (c *ServiceClaw) IsAgent() bool { return c != nil && (c.Agent != "" || len(c.Cllama) > 0) }

// Surface is one x-claw.surfaces entry, for example service://trading-api.
type Surface struct {
	// Raw is the entry as written.
	Raw string
	// Scheme is the part before "://" ("service", …).
	Scheme string
	// Target is the part after "://" (the service name for service://).
	Target string
}

// GrantEntry is one tools: / tools-defaults: list entry before expansion.
type GrantEntry struct {
	// Spread is the `...` entry: splice the pod defaults here.
	Spread  bool
	Service string
	// All is `allow: all` (or a bare service name).
	All   bool
	Names []string
	// Mode is the entry's mode: as written (manifest.ModeMediated or
	// ModeNative); empty takes x-claw.tools-mode (see Claw.EntryMode).
	Mode string
	// When is the entry's condition (a CEL expression, checked): the
	// tools it grants are available only while it holds. Empty: always.
	When string
	// Key is where the entry was written, for errors (e.g. "x-claw.tools[1]").
	Key string
}

// EntryMode is the mode entry e gives the tools it grants: its own mode:,
// else the pod's tools-mode, else mediated.
func (c *Claw) EntryMode(e GrantEntry) string {
	switch {
	case e.Mode != "":
		return e.Mode
	case c != nil && c.ToolsMode != "":
		return c.ToolsMode
	}
	return manifest.ModeMediated
}

// Grant is the normalised verb authority over one service: All wins,
// otherwise Tools is the sorted union of the names granted.
type Grant struct {
	Service string
	All     bool
	Tools   []string
	// Keys are the entries that contributed, for errors and inspection.
	Keys []string
	// NameKeys is, per tool name, the entry that first granted it: an
	// error about one name points where that name was written.
	NameKeys map[string]string
}

// FeedEntry is one feeds: / feeds-defaults: entry before expansion.
type FeedEntry struct {
	Spread bool
	// Name is the short form's feed name, or the explicit form's optional
	// name.
	Name   string
	Source string
	Path   string
	// TTL is seconds; nil when not written.
	TTL *int
	Key string
}

// Short reports whether the entry names a descriptor feed by name only.
func (f FeedEntry) Short() bool { return !f.Spread && f.Source == "" && f.Path == "" }

// PolicySpec is a tool-policy block; nil fields are unset.
type PolicySpec struct {
	MaxRounds          *int
	TimeoutPerToolMS   *int
	TotalTimeoutMS     *int
	MaxToolResultBytes *int
	// MaxToolCallsPerRound and MaxToolCallsPerTurn cap the managed calls
	// run per model response and per runner request.
	MaxToolCallsPerRound *int
	MaxToolCallsPerTurn  *int
	// MaxParallel bounds the parallel-safe calls of one model response
	// that run at the same time.
	MaxParallel *int
	// ResultTTLMS is result-ttl (a duration such as "30m") in
	// milliseconds: how long a kept result's handle stays readable.
	ResultTTLMS *int
}

// MCPStdio is x-claw.mcp-stdio: the stdio MCP server the wrapper runs.
type MCPStdio struct {
	Command string
	Args    []string
}

// ServiceAuthSpec is a credential projected for one target service.
type ServiceAuthSpec struct {
	Token     string
	Principal string
}

// ToolAnnotations are the annotations an operator may set on a service's
// tool in the pod file.
type ToolAnnotations struct {
	ParallelSafe *bool
}
