package compile

import (
	"fmt"
	"maps"

	"github.com/clawdapus/clawgo/internal/pod"
)

// DefaultRunnerEnv are the variables every cllama agent gets, so that the
// runners and SDKs people use find cllama whichever name they read
// (docs/operator-guide.md "The perimeter" lists which runner reads which).
// x-claw.runner-env adds more.
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
// pod author's value, or claw's, depending on the runner. The same goes
// for the native-tool variables of agents with native tools, which
// runner-env may not name either.
func (b *builder) checkRunnerEnv(agents []*Agent) error {
	native := map[string][]*Agent{}
	for _, a := range agents {
		if NativeEnv(a) != nil {
			native[a.Service] = append(native[a.Service], a)
		}
	}
	for _, svc := range b.pod.Agents() {
		if !svc.Claw.CllamaEnabled() {
			continue
		}
		if err := b.checkNativeEnv(svc, native[svc.Name]); err != nil {
			return err
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

// checkNativeEnv refuses, for an agent service with native tools (agents
// are its replicas), a runner-env entry or an environment value for
// EnvMCPURL or EnvMCPToken other than what claw sets.
func (b *builder) checkNativeEnv(svc *pod.Service, agents []*Agent) error {
	if len(agents) == 0 {
		return nil
	}
	for _, name := range []string{EnvMCPURL, EnvMCPToken} {
		if _, ok := svc.Claw.RunnerEnv[name]; ok {
			return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "x-claw.runner-env." + name, Problem: name + " is the variable claw sets to the agent's native-tool endpoint or token", Fix: "give the runner variable another name"}
		}
		if _, ok := b.pod.Claw.RunnerEnv[name]; ok {
			return &pod.Error{File: b.pod.File, Key: "x-claw.runner-env." + name, Problem: fmt.Sprintf("%s is the variable claw sets to the native-tool endpoint or token of agents with native tools (%q has some)", name, svc.Name), Fix: "give the runner variable another name"}
		}
		set, ok := svc.Compose.Environment[name]
		if !ok || set == nil || *set == "" {
			continue
		}
		for _, a := range agents {
			if want := NativeEnv(a)[name]; *set != want {
				// The value is not quoted: it may be a credential.
				problem := fmt.Sprintf("the agent has native tools, so claw sets %s to its own cllama token; the environment's value would stand in for it", name)
				if name == EnvMCPURL {
					problem = fmt.Sprintf("%q would point the runner away from cllama; the agent has native tools, so claw sets %s to %s", *set, name, want)
				}
				return &pod.Error{File: b.pod.File, Service: svc.Name, Key: "environment." + name, Problem: problem, Fix: "remove " + name + " from the agent's environment (and env_file)"}
			}
		}
	}
	return nil
}
