package compile

import (
	"fmt"
	"maps"

	"github.com/clawdapus/clawgo/internal/pod"
)

// DefaultRunnerEnv are the variables every cllama agent gets, so that the
// runners and SDKs people use find cllama whichever name they read (the
// README lists which runner reads which). x-claw.runner-env adds more.
var DefaultRunnerEnv = map[string]pod.RunnerEnvValue{
	"OPENAI_BASE_URL":        pod.RunnerEnvOpenAIBaseURL,
	"OPENAI_API_BASE":        pod.RunnerEnvOpenAIBaseURL,
	"OPENAI_API_ENDPOINT":    pod.RunnerEnvOpenAIBaseURL,
	"ANTHROPIC_BASE_URL":     pod.RunnerEnvAnthropicBaseURL,
	"ANTHROPIC_API_ENDPOINT": pod.RunnerEnvAnthropicBaseURL,
	"OPENAI_API_KEY":         pod.RunnerEnvToken,
	"ANTHROPIC_API_KEY":      pod.RunnerEnvToken,
	"ANTHROPIC_AUTH_TOKEN":   pod.RunnerEnvToken,
}

// runnerEnvNames merges the defaults, the pod's runner-env and the
// agent's, later winning by name.
func (b *builder) runnerEnvNames(svc *pod.Service) map[string]pod.RunnerEnvValue {
	names := maps.Clone(DefaultRunnerEnv)
	maps.Copy(names, b.pod.Claw.RunnerEnv)
	maps.Copy(names, svc.Claw.RunnerEnv)
	return names
}

// runnerEnv is the environment pointing agent a's runner at cllama.
func (b *builder) runnerEnv(a *Agent) map[string]string {
	out := map[string]string{}
	for name, v := range b.runnerEnvNames(b.pod.Services[a.Service]) {
		out[name] = runnerEnvValue(v, a.Token)
	}
	return out
}

func runnerEnvValue(v pod.RunnerEnvValue, token string) string {
	switch v {
	case pod.RunnerEnvOpenAIBaseURL:
		return fmt.Sprintf("http://%s:%d/v1", CllamaService, CllamaPort)
	case pod.RunnerEnvAnthropicBaseURL:
		return fmt.Sprintf("http://%s:%d", CllamaService, CllamaPort)
	default:
		return token
	}
}

// checkRunnerEnv refuses an agent environment that sets a runner-env
// variable to anything but what claw gives it: the runner would read the
// pod author's value, or claw's, depending on the runner.
func (b *builder) checkRunnerEnv() error {
	for _, svc := range b.pod.Agents() {
		if !svc.Claw.CllamaEnabled() {
			continue
		}
		for name, v := range b.runnerEnvNames(svc) {
			set, ok := svc.Compose.Environment[name]
			if !ok || set == nil || v == pod.RunnerEnvToken {
				// Tokens an author might set are provider keys, refused by
				// credential starvation with a better message; an empty
				// value is overridden like an absent one.
				continue
			}
			if want := runnerEnvValue(v, ""); *set != want && *set != "" {
				return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "environment." + name, Problem: fmt.Sprintf("%q would point the runner away from cllama; claw sets %s to %s", *set, name, want), Fix: "remove " + name + " from the agent's environment (and env_file)"}
			}
		}
	}
	return nil
}
