package pod

import (
	"fmt"
	"slices"
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// decoder turns the untyped x-claw values compose-go hands over
// (map[string]any, []any, string, int, …) into the typed grammar, naming
// file, service and key in every error.
type decoder struct {
	file    string
	service string
	// pod is the pod's decoded x-claw block when a service's is decoded
	// in a pod (nil alone): messages about its tools say what their mode
	// makes true.
	pod *Claw
}

func (d *decoder) errf(key, fix, format string, args ...any) *Error {
	return &Error{File: d.file, Service: d.service, Key: key, Problem: fmt.Sprintf(format, args...), Fix: fix}
}

// DecodePodClaw decodes the pod-level x-claw value. file names the pod file
// in errors. It reports every problem of the block (an Errors), not just
// the first.
func DecodePodClaw(file string, v any) (Claw, error) {
	d := &decoder{file: file}
	return d.podClaw(v)
}

// DecodeServiceClaw decodes one service's x-claw value, reporting every
// problem of the block.
func DecodeServiceClaw(file, service string, v any) (*ServiceClaw, error) {
	return decodeServiceClaw(file, service, nil, v)
}

// decodeServiceClaw is DecodeServiceClaw for a service of a pod whose
// x-claw block is pod.
func decodeServiceClaw(file, service string, pod *Claw, v any) (*ServiceClaw, error) {
	d := &decoder{file: file, service: service, pod: pod}
	return d.serviceClaw(v)
}

func (d *decoder) object(key string, v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, d.errf(key, "write it as a mapping of keys", "must be a mapping, got %s", typeName(v))
	}
	return m, nil
}

// unknownKeys refuses every key of the mapping m (written at prefix) that
// is not in known, suggesting the nearest known key. An unknown key is an
// error, not a warning: claw would ignore it, and a misspelt one (`tols:`,
// `alow:`) silently changes what the pod means (an agent without its
// tools, a grant falling back to the defaults).
func (d *decoder) unknownKeys(prefix string, m map[string]any, known []string) error {
	var out Errors
	for _, k := range sortedKeys(m) {
		if !slices.Contains(known, k) {
			out = append(out, d.errf(prefix+"."+k, fmt.Sprintf("%suse one of: %s", didYouMean(k, known), strings.Join(known, ", ")), "unknown key"))
		}
	}
	return out.Err()
}

// DidYouMean is didYouMean for other packages' messages.
func DidYouMean(k string, known []string) string { return didYouMean(k, known) }

// didYouMean suggests the known key nearest to k ("did you mean `tools`? "),
// when one is within a few edits; else "".
func didYouMean(k string, known []string) string {
	best, bestD := "", max(1, len(k)/3)+1
	for _, kn := range known {
		if dist := editDistance(strings.ToLower(k), strings.ToLower(kn)); dist < bestD {
			best, bestD = kn, dist
		}
	}
	if best == "" {
		return ""
	}
	return "did you mean `" + best + "`? "
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func (d *decoder) podClaw(v any) (Claw, error) {
	var c Claw
	if v == nil {
		return c, nil
	}
	m, err := d.object("x-claw", v)
	if err != nil {
		return c, err
	}
	return c, decodeKeys(d, "x-claw", podKeyDecoders, m, &c).Err()
}

// MaxCllamaReplicas bounds x-claw.cllama-defaults.replicas.
const MaxCllamaReplicas = 64

func (d *decoder) cllamaDefaults(v any) (CllamaDefaults, error) {
	var cd CllamaDefaults
	m, err := d.object("x-claw.cllama-defaults", v)
	if err != nil {
		return cd, err
	}
	if err := d.unknownKeys("x-claw.cllama-defaults", m, []string{"env", "image", "healthcheck", "default-provider", "models", "replicas", "providers", "fallbacks", "pricing"}); err != nil {
		return cd, err
	}
	switch hc := m["healthcheck"].(type) {
	case nil:
	case string:
		if hc != "none" {
			return cd, d.errf("x-claw.cllama-defaults.healthcheck", `write a command list such as ["CMD", "/cllama", "-healthcheck"], or "none"`, "%q is neither a command list nor \"none\"", hc)
		}
		cd.HealthcheckOff = true
	case []any:
		for i, e := range hc {
			s, err := d.scalar(fmt.Sprintf("x-claw.cllama-defaults.healthcheck[%d]", i), e)
			if err != nil {
				return cd, err
			}
			cd.Healthcheck = append(cd.Healthcheck, s)
		}
		if len(cd.Healthcheck) == 0 {
			cd.HealthcheckOff = true
		}
	default:
		return cd, d.errf("x-claw.cllama-defaults.healthcheck", `write a command list such as ["CMD", "/cllama", "-healthcheck"], or "none"`, "must be a list or \"none\", got %s", typeName(hc))
	}
	if cd.Image, err = d.str("x-claw.cllama-defaults.image", m["image"], false); err != nil {
		return cd, err
	}
	if cd.DefaultProvider, err = d.str("x-claw.cllama-defaults.default-provider", m["default-provider"], false); err != nil {
		return cd, err
	}
	cd.DefaultProvider = strings.ToLower(cd.DefaultProvider)
	if raw, ok := m["models"]; ok && raw != nil {
		if cd.Models, err = d.models("x-claw.cllama-defaults.models", raw); err != nil {
			return cd, err
		}
	}
	if raw, ok := m["replicas"]; ok && raw != nil {
		n, err := d.integer("x-claw.cllama-defaults.replicas", raw)
		if err != nil {
			return cd, err
		}
		if n < 1 || n > MaxCllamaReplicas {
			return cd, d.errf("x-claw.cllama-defaults.replicas", fmt.Sprintf("use a number of cllama pods between 1 and %d", MaxCllamaReplicas), "must be between 1 and %d, got %d", MaxCllamaReplicas, n)
		}
		cd.Replicas = n
	}
	if raw, ok := m["env"]; ok && raw != nil {
		if cd.Env, err = d.env("x-claw.cllama-defaults.env", raw); err != nil {
			return cd, err
		}
	}
	if raw, ok := m["providers"]; ok && raw != nil {
		if cd.Providers, err = d.providerPools("x-claw.cllama-defaults.providers", raw); err != nil {
			return cd, err
		}
	}
	if raw, ok := m["fallbacks"]; ok && raw != nil {
		if cd.Fallbacks, err = d.fallbacks("x-claw.cllama-defaults.fallbacks", raw); err != nil {
			return cd, err
		}
	}
	if raw, ok := m["pricing"]; ok && raw != nil {
		if cd.Pricing, err = d.pricing("x-claw.cllama-defaults.pricing", raw); err != nil {
			return cd, err
		}
	}
	return cd, nil
}

// Bounds of the provider pools and fallback chains (cllama's own).
const (
	MaxProviderKeys    = 64
	MaxFallbackSources = 256
	MaxFallbackTargets = 8
)

// providerPools decodes providers: a mapping of provider name to its keys
// and base URL.
func (d *decoder) providerPools(key string, v any) (map[string]ProviderPool, error) {
	m, err := d.object(key, v)
	if err != nil {
		return nil, err
	}
	out := map[string]ProviderPool{}
	for _, name := range sortedKeys(m) {
		k := key + "." + name
		lower := strings.ToLower(name)
		if lower == "" || strings.ContainsAny(lower, "/ ") || lower != name {
			return nil, d.errf(k, "write the provider's lower-case name, e.g. openai", "%q is not a provider name", name)
		}
		pm, err := d.object(k, m[name])
		if err != nil {
			return nil, err
		}
		if err := d.unknownKeys(k, pm, []string{"keys", "base-url"}); err != nil {
			return nil, err
		}
		var pp ProviderPool
		if pp.BaseURL, err = d.str(k+".base-url", pm["base-url"], false); err != nil {
			return nil, err
		}
		if pp.BaseURL != "" && !strings.HasPrefix(pp.BaseURL, "http://") && !strings.HasPrefix(pp.BaseURL, "https://") {
			return nil, d.errf(k+".base-url", "write the provider's base URL, e.g. https://api.openai.com/v1", "%q is not an http(s) URL", pp.BaseURL)
		}
		const fix = `write a list of keys, each from the environment: ["${OPENAI_KEY_A}", "${OPENAI_KEY_B}"]`
		list, ok := pm["keys"].([]any)
		if pm["keys"] != nil && !ok {
			return nil, d.errf(k+".keys", fix, "must be a list, got %s", typeName(pm["keys"]))
		}
		if len(list) > MaxProviderKeys {
			return nil, d.errf(k+".keys", fmt.Sprintf("list at most %d keys", MaxProviderKeys), "%d keys", len(list))
		}
		for i, e := range list {
			s, ok := e.(string)
			if !ok || strings.TrimSpace(s) == "" {
				return nil, d.errf(fmt.Sprintf("%s.keys[%d]", k, i), fix+"; is the variable set?", "is empty or not a string")
			}
			if slices.Contains(pp.Keys, s) {
				return nil, d.errf(fmt.Sprintf("%s.keys[%d]", k, i), "list each key once", "the same key as an earlier entry")
			}
			pp.Keys = append(pp.Keys, s)
		}
		if len(pp.Keys) == 0 && pp.BaseURL == "" {
			return nil, d.errf(k, fix+`, and/or base-url`, "names neither keys nor a base URL")
		}
		out[name] = pp
	}
	return out, nil
}

// fallbacks decodes fallbacks: a mapping of "<provider>/<model>" to the
// list of "<provider>/<model>" tried in turn.
func (d *decoder) fallbacks(key string, v any) (map[string][]string, error) {
	const fix = `write "<provider>/<model>": ["<provider>/<model>", ...], e.g. "anthropic/claude-sonnet-4-5": ["openrouter/anthropic/claude-sonnet-4.5"]`
	m, err := d.object(key, v)
	if err != nil {
		return nil, err
	}
	if len(m) > MaxFallbackSources {
		return nil, d.errf(key, fmt.Sprintf("list at most %d models", MaxFallbackSources), "%d models", len(m))
	}
	ref := func(s string) bool {
		p, mod, ok := strings.Cut(s, "/")
		return ok && p != "" && mod != "" && strings.TrimSpace(s) == s
	}
	out := map[string][]string{}
	for _, src := range sortedKeys(m) {
		k := key + "." + src
		if !ref(src) {
			return nil, d.errf(k, fix, "%q is not \"<provider>/<model>\"", src)
		}
		list, ok := m[src].([]any)
		if !ok || len(list) == 0 || len(list) > MaxFallbackTargets {
			return nil, d.errf(k, fix, "must be a list of 1 to %d models", MaxFallbackTargets)
		}
		var targets []string
		for i, e := range list {
			s, ok := e.(string)
			ek := fmt.Sprintf("%s[%d]", k, i)
			if !ok || !ref(s) {
				return nil, d.errf(ek, fix, "must be \"<provider>/<model>\"")
			}
			if s == src || slices.Contains(targets, s) {
				return nil, d.errf(ek, "list each target once, never the model itself", "%q is the model itself or listed twice", s)
			}
			targets = append(targets, s)
		}
		out[src] = targets
	}
	return out, nil
}

// env accepts a mapping or a list of KEY=VALUE strings, like compose's
// environment.
func (d *decoder) env(key string, v any) (map[string]string, error) {
	out := map[string]string{}
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			s, err := d.scalar(key+"."+k, val)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
	case []any:
		for i, e := range t {
			s, ok := e.(string)
			k, val, found := strings.Cut(s, "=")
			if !ok || !found || k == "" {
				return nil, d.errf(fmt.Sprintf("%s[%d]", key, i), "write KEY=VALUE or use a mapping", "must be a KEY=VALUE string")
			}
			out[k] = val
		}
	default:
		return nil, d.errf(key, "write a mapping of VARIABLE: value", "must be a mapping or a list, got %s", typeName(v))
	}
	return out, nil
}

func (d *decoder) serviceClaw(v any) (*ServiceClaw, error) {
	c := &ServiceClaw{Count: 1}
	if v == nil {
		return c, nil
	}
	m, err := d.object("x-claw", v)
	if err != nil {
		return nil, err
	}
	// Every problem of the service is reported, not just the first: each
	// key is decoded whatever became of the others.
	problems := decodeKeys(d, "x-claw", serviceKeyDecoders, m, c)
	problems = append(problems, d.serviceRules(c, m)...)
	if err := problems.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// serviceRules are the rules between a service's keys, checked once each
// key is decoded: what an agent may not declare, and what needs cllama.
func (d *decoder) serviceRules(c *ServiceClaw, m map[string]any) []*Error {
	var out []*Error
	if c.Egress && !c.IsAgent() {
		out = append(out, d.errf("x-claw.egress", "remove egress: a service that is not an agent keeps the networks its compose definition gives it", "egress applies to agents (services that declare agent or cllama)"))
	}
	if m["runner-env"] != nil && !c.CllamaEnabled() {
		out = append(out, d.errf("x-claw.runner-env", "add `cllama: passthrough` to this service's x-claw, or remove runner-env", "runner-env points a runner at cllama, but the service does not declare cllama"))
	}
	if len(c.ToolManifests) > 0 && c.IsAgent() {
		out = append(out, d.errf("x-claw.tool-manifests", "attach tool manifests to the service that provides the tools, and grant them to the agent with tools:", "an agent cannot provide tools (it declares agent or cllama)"))
	}
	if c.ToolAnnotations != nil && c.IsAgent() {
		out = append(out, d.errf("x-claw.tool-annotations", "move tool-annotations to the service that provides the tools", "an agent provides no tools to annotate"))
	}
	if c.MCPStdio != nil && c.IsAgent() {
		out = append(out, d.errf("x-claw.mcp-stdio", "run the stdio MCP server as its own service and grant its tools to the agent", "a stdio MCP service cannot also be an agent (it declares agent or cllama)"))
	}
	if c.CllamaEnabled() {
		return out
	}
	if c.HasTools {
		out = append(out, d.toolsWithoutCllama(c))
	}
	if c.HasFeeds {
		out = append(out, d.errf("x-claw.feeds", "add `cllama: passthrough` to this service's x-claw, or remove feeds", "feeds are injected by the cllama proxy, but the service does not declare cllama"))
	}
	if c.ToolPolicy != (PolicySpec{}) {
		out = append(out, d.errf("x-claw.tool-policy", "add `cllama: passthrough` or remove tool-policy", "tool-policy applies to cllama-mediated tools, but the service does not declare cllama"))
	}
	return out
}

// toolsWithoutCllama is the error for a service granted tools without
// cllama, saying why for the mode they are granted in: mediated tools are
// run by the proxy; native ones the runner calls itself, but on cllama's
// /mcp endpoint, so a native agent needs cllama all the same.
func (d *decoder) toolsWithoutCllama(c *ServiceClaw) *Error {
	pod := d.pod
	if pod == nil {
		pod = &Claw{}
	}
	entries, err := ExpandGrants(d.file, d.service, pod, c)
	if err != nil {
		entries = c.Tools
	}
	native, mediated := false, false
	for _, e := range entries {
		if e.Spread {
			continue
		}
		switch pod.EntryMode(e) {
		case manifest.ModeNative:
			native = true
		default:
			mediated = true
		}
	}
	if native && !mediated {
		return d.errf("x-claw.tools", "add `cllama: passthrough` to this service's x-claw (native tools need it too), or remove tools",
			"native tools are served by cllama's /mcp endpoint (the runner calls them there), so the agent still needs cllama, but the service does not declare it")
	}
	return d.errf("x-claw.tools", "add `cllama: passthrough` to this service's x-claw, or remove tools", "managed tools need the cllama proxy, but the service does not declare cllama")
}

func (d *decoder) cllama(v any) ([]string, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		if t == "" {
			return nil, nil
		}
		return []string{t}, nil
	case []any:
		var out []string
		for i, e := range t {
			s, ok := e.(string)
			if !ok || s == "" {
				return nil, d.errf(fmt.Sprintf("x-claw.cllama[%d]", i), "write a proxy type such as passthrough", "must be a non-empty string")
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, d.errf("x-claw.cllama", "write `cllama: passthrough`", "must be a string or a list of strings, got %s", typeName(v))
	}
}

func (d *decoder) surfaces(v any) ([]Surface, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, d.errf("x-claw.surfaces", "write a list such as [\"service://trading-api\"]", "must be a list, got %s", typeName(v))
	}
	out := make([]Surface, 0, len(list))
	for i, e := range list {
		key := fmt.Sprintf("x-claw.surfaces[%d]", i)
		s, ok := e.(string)
		if !ok {
			return nil, d.errf(key, "write service://<name>", "must be a string, got %s", typeName(e))
		}
		scheme, target, found := strings.Cut(s, "://")
		if !found || scheme == "" || target == "" {
			return nil, d.errf(key, "write service://<name>", "%q is not a surface URI", s)
		}
		out = append(out, Surface{Raw: s, Scheme: scheme, Target: target})
	}
	return out, nil
}

// runnerEnv decodes a runner-env mapping: VARIABLE: openai-base-url |
// anthropic-base-url | token.
func (d *decoder) runnerEnv(key string, v any) (map[string]RunnerEnvValue, error) {
	m, err := d.object(key, v)
	if err != nil {
		return nil, err
	}
	known := make([]string, len(RunnerEnvValues))
	for i, k := range RunnerEnvValues {
		known[i] = string(k)
	}
	out := make(map[string]RunnerEnvValue, len(m))
	for _, name := range sortedKeys(m) {
		if !validEnvName(name) {
			return nil, d.errf(key+"."+name, "name the variable with letters, digits and '_' (not starting with a digit)", "%q is not an environment variable name", name)
		}
		s, ok := m[name].(string)
		val := RunnerEnvValue(s)
		if !ok || !slices.Contains(RunnerEnvValues, val) {
			return nil, d.errf(key+"."+name, "write one of: "+strings.Join(known, ", "), "%s is not a value claw can give a runner", describeValue(m[name]))
		}
		out[name] = val
	}
	return out, nil
}

func validEnvName(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// toolAnnotations decodes x-claw.tool-annotations: per tool of the
// service, the annotations the operator vouches for over what the service
// (or its MCP listing, which has no such field) declares.
func (d *decoder) toolAnnotations(v any) (map[string]ToolAnnotations, error) {
	m, err := d.object("x-claw.tool-annotations", v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ToolAnnotations, len(m))
	for name, raw := range m {
		key := "x-claw.tool-annotations." + name
		tm, err := d.object(key, raw)
		if err != nil {
			return nil, err
		}
		if err := d.unknownKeys(key, tm, []string{"parallel_safe"}); err != nil {
			return nil, err
		}
		var ta ToolAnnotations
		if raw, ok := tm["parallel_safe"]; ok && raw != nil {
			b, err := d.boolean(key+".parallel_safe", raw)
			if err != nil {
				return nil, err
			}
			ta.ParallelSafe = &b
		}
		out[name] = ta
	}
	return out, nil
}

func (d *decoder) mcpStdio(v any) (*MCPStdio, error) {
	m, err := d.object("x-claw.mcp-stdio", v)
	if err != nil {
		return nil, err
	}
	if err := d.unknownKeys("x-claw.mcp-stdio", m, []string{"command", "args"}); err != nil {
		return nil, err
	}
	ms := &MCPStdio{}
	if ms.Command, err = d.str("x-claw.mcp-stdio.command", m["command"], true); err != nil {
		return nil, err
	}
	if raw, ok := m["args"]; ok && raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return nil, d.errf("x-claw.mcp-stdio.args", "write a list of strings", "must be a list, got %s", typeName(raw))
		}
		for i, a := range list {
			s, err := d.scalar(fmt.Sprintf("x-claw.mcp-stdio.args[%d]", i), a)
			if err != nil {
				return nil, err
			}
			ms.Args = append(ms.Args, s)
		}
	}
	return ms, nil
}

// toolManifests accepts one path or a list of paths.
func (d *decoder) toolManifests(v any) ([]string, error) {
	const fix = "write a list of CKP Tool manifest paths, relative to the pod file"
	list, ok := v.([]any)
	if !ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, d.errf("x-claw.tool-manifests", fix, "must be a list of paths, got %s", typeName(v))
		}
		list = []any{s}
	}
	out := make([]string, 0, len(list))
	seen := map[string]bool{}
	for i, e := range list {
		key := fmt.Sprintf("x-claw.tool-manifests[%d]", i)
		s, ok := e.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return nil, d.errf(key, fix, "must be a non-empty path string")
		}
		if seen[s] {
			return nil, d.errf(key, "list each manifest once", "%q is listed twice", s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

func (d *decoder) serviceAuth(v any) (map[string]ServiceAuthSpec, error) {
	m, err := d.object("x-claw.service-auth", v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ServiceAuthSpec, len(m))
	for _, svc := range sortedKeys(m) {
		key := "x-claw.service-auth." + svc
		switch t := m[svc].(type) {
		case string:
			if t == "" {
				return nil, d.errf(key, "set the token, e.g. ${TOKEN}", "token is empty")
			}
			out[svc] = ServiceAuthSpec{Token: t}
		case map[string]any:
			if err := d.unknownKeys(key, t, []string{"token", "principal"}); err != nil {
				return nil, err
			}
			tok, err := d.str(key+".token", t["token"], true)
			if err != nil {
				return nil, err
			}
			p, err := d.str(key+".principal", t["principal"], false)
			if err != nil {
				return nil, err
			}
			out[svc] = ServiceAuthSpec{Token: tok, Principal: p}
		default:
			return nil, d.errf(key, "write a token string or {token, principal}", "must be a string or a mapping, got %s", typeName(m[svc]))
		}
	}
	return out, nil
}

// models decodes a model allow-list: a list of distinct, non-empty model
// names ("<provider>/<model>", or a bare name for the default provider).
func (d *decoder) models(key string, v any) ([]string, error) {
	const fix = `write a list such as ["anthropic/claude-sonnet-4-5", "openai/gpt-4o"]`
	list, ok := v.([]any)
	if !ok {
		return nil, d.errf(key, fix, "must be a list of model names, got %s", typeName(v))
	}
	out := make([]string, 0, len(list))
	seen := map[string]bool{}
	for i, e := range list {
		k := fmt.Sprintf("%s[%d]", key, i)
		s, ok := e.(string)
		if !ok || strings.TrimSpace(s) == "" || strings.TrimSpace(s) != s {
			return nil, d.errf(k, fix, "must be a model name without spaces around it")
		}
		if seen[s] {
			return nil, d.errf(k, "list each model once", "%q is listed twice", s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}
