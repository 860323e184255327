package compile

import (
	"io"

	"github.com/clawdapus/clawgo/internal/capability"
	"github.com/clawdapus/clawgo/internal/manifest"
)

// DefaultCllamaImage is the cllama image used when neither Options nor the
// pod's x-claw.cllama-defaults.image names one: a local tag, built by
// `make images`, so nothing is pulled.
const DefaultCllamaImage = "clawgo/cllama:latest"

// Output locations, relative to the pod directory.
const (
	RuntimeDir    = ".claw-runtime"
	ContextDir    = ".claw-runtime/context"
	AuthDir       = ".claw-auth"
	ProvidersFile = ".claw-auth/providers.json"
	// PodSettingsFile is the pod-wide settings cllama reads (manifest.Pod).
	PodSettingsFile = ".claw-auth/" + manifest.PodFile
	// OperatorTokenFile is the operator token cllama's admin listener
	// requires (approvals, the console); never mounted into an agent.
	OperatorTokenFile = ".claw-auth/operator-token"
	GeneratedFile     = "compose.generated.yml"
	CllamaService     = "cllama"
	InternalNet       = "claw-internal"
	HistoryVolume     = "claw-session-history"
	CllamaPort        = 8080
	defaultFeedTTL    = capability.DefaultFeedTTL
)

// Options configures Build. The zero value reads no images, uses
// DefaultCllamaImage and crypto/rand.
type Options struct {
	// Images reads descriptors from local images; nil skips that lookup
	// step (as `claw compile` does, touching no Docker).
	Images ImageSource
	// CllamaImage overrides the cllama image (it wins over
	// x-claw.cllama-defaults.image). Default DefaultCllamaImage.
	CllamaImage string
	// Rand is the token entropy source; default crypto/rand.Reader.
	Rand io.Reader
	// Progress, when set, is told what each slow step (reading an image)
	// found: the descriptor it read, or that the image has none.
	Progress func(msg string)
	// PublishCllama, when set, publishes cllama's port on the host at
	// this "<ip>:<port>" (claw up --publish-cllama), for reaching the
	// proxy from the host while testing.
	PublishCllama string
	// PublishMetrics, when set, turns cllama's Prometheus metrics on (at
	// MetricsPort, unless x-claw.cllama-defaults.env sets
	// CLLAMA_METRICS_ADDR) and publishes them on the host at this
	// "<ip>:<port>" (claw up --publish-metrics).
	PublishMetrics string
	// PublishAdmin is where the host publishes cllama's admin listener:
	// "<ip>:<port>", or "<ip>:" for a free port; empty means
	// DefaultPublishAdmin (claw up --publish-admin).
	PublishAdmin string
	// KeepTokens, when non-nil, supplies previous tokens by agent id instead
	// of reading them from the pod directory (tests).
	KeepTokens map[string]string
}

// MetricsPort is where cllama serves metrics when claw turns them on.
const MetricsPort = 9090

// AdminPort is where cllama serves its admin listener in the pod.
const AdminPort = 8081

// DefaultPublishAdmin publishes the admin listener on the host's
// loopback at a free port (claw up prints it).
const DefaultPublishAdmin = "127.0.0.1:"

// RunnerDir holds, per agent, what claw gives the agent's runner itself
// (<agent-id>/mcp.json for an agent with native tools), relative to the
// pod directory. Each agent mounts its own files only; unlike ContextDir,
// cllama does not read it.
const RunnerDir = ".claw-runtime/runner"
