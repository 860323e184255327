package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ToolsManifestVersion is the tools.json version this package writes.
const ToolsManifestVersion = 1

// Policy defaults (spec 000 "Budgets"; 002 "Budget limits").
const (
	DefaultMaxRounds          = 8
	DefaultTimeoutPerToolMS   = 30000
	DefaultTotalTimeoutMS     = 120000
	DefaultMaxToolResultBytes = 16384
	// A model response may carry any number of tool calls; these bound how
	// many of them cllama answers by running them (issue 20: one response
	// with 10,000 calls must not become 10,000 service calls).
	DefaultMaxToolCallsPerRound = 32
	DefaultMaxToolCallsPerTurn  = 128
	// DefaultMaxParallelCalls bounds how many parallel-safe calls of one
	// model response run at the same time.
	DefaultMaxParallelCalls = 4
)

// Tools is <context>/<agent-id>/tools.json: the mediated execution manifest.
type Tools struct {
	Version int    `json:"version"`
	Tools   []Tool `json:"tools"`
	Policy  Policy `json:"policy"`
	// Rules are the grants' conditions (pod key `when:`, CEL), by id;
	// a tool names the ones under which it is available.
	Rules []Rule `json:"rules,omitempty"`
}

// Rule is one grant condition: a CEL expression (internal/policy) and
// where it was written.
type Rule struct {
	ID     string `json:"id"`
	When   string `json:"when"`
	Source string `json:"source"`
}

// Tool is one managed tool. Name is canonical: "<service>.<tool>".
// Name, Description, InputSchema and Annotations are what the model sees;
// Execution never leaves the proxy.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema, when present, is a JSON Schema results are checked against.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
	// Mode is how the agent reaches the tool: ModeMediated (cllama adds
	// it to model requests and runs the model's calls) or ModeNative (the
	// runner lists and calls it on cllama's MCP endpoint, /mcp). Empty
	// reads as mediated, the mode of every tools.json written before
	// modes existed. A tool has one mode per agent.
	Mode string `json:"mode,omitempty"`
	// When lists the rules (Tools.Rules ids) under which the tool is
	// available: while any of them holds. Empty: always (some grant of
	// the tool has no condition).
	When      []string  `json:"when,omitempty"`
	Execution Execution `json:"execution"`
}

// Tool modes (pod key `mode`, x-claw.tools-mode).
const (
	ModeMediated = "mediated"
	ModeNative   = "native"
)

// Native reports whether the tool is served on /mcp rather than added to
// model requests.
func (t *Tool) Native() bool { return t.Mode == ModeNative }

// ValidMode reports whether m names a tool mode ("" is not one: callers
// that accept a default say so).
func ValidMode(m string) bool { return m == ModeMediated || m == ModeNative }

// Annotations are MCP tool annotations plus the descriptor's readOnly
// and parallel_safe. They are untrusted hints (MCP) used for policy and
// audit display.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnly        *bool  `json:"readOnly,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
	// ParallelSafe says the tool's service may run several calls of it
	// (and of other parallel-safe tools) at once: cllama then runs the
	// consecutive parallel-safe calls of one model response concurrently,
	// at most the policy's max_parallel_calls at a time. Absent or false,
	// a call runs alone. The service's author declares it; nothing infers
	// it from readOnly.
	ParallelSafe *bool `json:"parallel_safe,omitempty"`
}

// IsReadOnly reports whether either readOnly form is set true.
func (a *Annotations) IsReadOnly() bool {
	return a != nil && ((a.ReadOnly != nil && *a.ReadOnly) || (a.ReadOnlyHint != nil && *a.ReadOnlyHint))
}

// IsIdempotent reports whether the tool may be retried safely.
func (a *Annotations) IsIdempotent() bool {
	return a.IsReadOnly() || (a != nil && a.IdempotentHint != nil && *a.IdempotentHint)
}

// IsParallelSafe reports whether parallel_safe is set true.
func (a *Annotations) IsParallelSafe() bool {
	return a != nil && a.ParallelSafe != nil && *a.ParallelSafe
}

// Transports.
const (
	TransportHTTP = "http"
	TransportMCP  = "mcp"
)

// Execution is the hidden half of a tool: how cllama runs it.
type Execution struct {
	Transport string `json:"transport"`
	Service   string `json:"service"`
	BaseURL   string `json:"base_url"`
	// Method is the HTTP method (http transport only).
	Method string `json:"method,omitempty"`
	// Path is the HTTP path template (http) or the MCP endpoint path (mcp).
	Path string `json:"path"`
	// Body is "json" (the default for methods with a body).
	Body string `json:"body,omitempty"`
	// BodyKey wraps the JSON body's arguments under this key when set.
	BodyKey string `json:"body_key,omitempty"`
	// ToolName is the MCP tool name on the server (mcp transport).
	ToolName string `json:"tool_name,omitempty"`
	Auth     *Auth  `json:"auth,omitempty"`
	// TimeoutMS overrides the policy's per-tool timeout when > 0.
	TimeoutMS int    `json:"timeout_ms,omitempty"`
	Retry     *Retry `json:"retry,omitempty"`
}

// Auth is a credential cllama applies when calling a service.
type Auth struct {
	Type  string `json:"type"`
	Token string `json:"token,omitempty"`
}

// Retry configures retries of transient failures (CKP `retry`).
type Retry struct {
	MaxAttempts int `json:"max_attempts"`
	// Backoff is "exponential" (default) or "fixed".
	Backoff string `json:"backoff,omitempty"`
}

// Policy bounds one mediated turn.
type Policy struct {
	MaxRounds          int `json:"max_rounds"`
	TimeoutPerToolMS   int `json:"timeout_per_tool_ms"`
	TotalTimeoutMS     int `json:"total_timeout_ms"`
	MaxToolResultBytes int `json:"max_tool_result_bytes"`
	// MaxToolCallsPerRound bounds the managed calls run for one model
	// response, MaxToolCallsPerTurn those run for one runner request;
	// calls beyond either are answered too_many_tool_calls, not run.
	MaxToolCallsPerRound int `json:"max_tool_calls_per_round"`
	MaxToolCallsPerTurn  int `json:"max_tool_calls_per_turn"`
	// MaxParallelCalls bounds how many parallel-safe calls of one model
	// response run at the same time (1 runs every call alone).
	MaxParallelCalls int `json:"max_parallel_calls"`
	// ResultTTLMS is how long the handle of a result kept whole (over
	// max_tool_result_bytes) stays readable; 0 takes cllama's default
	// (1h). Pod key x-claw.tool-policy.result-ttl.
	ResultTTLMS int `json:"result_ttl_ms,omitempty"`
}

// DefaultPolicy returns the spec's defaults.
func DefaultPolicy() Policy {
	return Policy{
		MaxRounds:            DefaultMaxRounds,
		TimeoutPerToolMS:     DefaultTimeoutPerToolMS,
		TotalTimeoutMS:       DefaultTotalTimeoutMS,
		MaxToolResultBytes:   DefaultMaxToolResultBytes,
		MaxToolCallsPerRound: DefaultMaxToolCallsPerRound,
		MaxToolCallsPerTurn:  DefaultMaxToolCallsPerTurn,
		MaxParallelCalls:     DefaultMaxParallelCalls,
	}
}

// WithDefaults fills zero fields from DefaultPolicy.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	if p.MaxRounds == 0 {
		p.MaxRounds = d.MaxRounds
	}
	if p.TimeoutPerToolMS == 0 {
		p.TimeoutPerToolMS = d.TimeoutPerToolMS
	}
	if p.TotalTimeoutMS == 0 {
		p.TotalTimeoutMS = d.TotalTimeoutMS
	}
	if p.MaxToolResultBytes == 0 {
		p.MaxToolResultBytes = d.MaxToolResultBytes
	}
	if p.MaxToolCallsPerRound == 0 {
		p.MaxToolCallsPerRound = d.MaxToolCallsPerRound
	}
	if p.MaxToolCallsPerTurn == 0 {
		p.MaxToolCallsPerTurn = d.MaxToolCallsPerTurn
	}
	if p.MaxParallelCalls == 0 {
		p.MaxParallelCalls = d.MaxParallelCalls
	}
	return p
}

// Validate checks that every limit is positive, the total timeout covers
// at least one tool call and a turn allows at least one full round of
// calls. prefix names the location in error messages.
func (p Policy) Validate(prefix string) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"max_rounds", p.MaxRounds}, {"timeout_per_tool_ms", p.TimeoutPerToolMS}, {"total_timeout_ms", p.TotalTimeoutMS}, {"max_tool_result_bytes", p.MaxToolResultBytes},
		{"max_tool_calls_per_round", p.MaxToolCallsPerRound}, {"max_tool_calls_per_turn", p.MaxToolCallsPerTurn}, {"max_parallel_calls", p.MaxParallelCalls}} {
		if f.v <= 0 {
			return fmt.Errorf("%s.%s: must be > 0, got %d", prefix, f.name, f.v)
		}
	}
	if p.ResultTTLMS < 0 {
		return fmt.Errorf("%s.result_ttl_ms: must be >= 0 (0: the default), got %d", prefix, p.ResultTTLMS)
	}
	// A total_timeout_ms below timeout_per_tool_ms is no contradiction:
	// every call runs within what is left of the turn's total, so the
	// smaller budget governs.
	if p.MaxToolCallsPerTurn < p.MaxToolCallsPerRound {
		return fmt.Errorf("%s.max_tool_calls_per_turn: %d is below max_tool_calls_per_round %d; raise it or lower the per-round cap", prefix, p.MaxToolCallsPerTurn, p.MaxToolCallsPerRound)
	}
	return nil
}

// ValidServiceName reports whether s is a valid compose service name:
// ^[a-zA-Z0-9][a-zA-Z0-9_.-]*$. It is a loop, not a regexp compiled as
// cllama starts (the fuzz test holds it to the pattern).
func ValidServiceName(s string) bool {
	if s == "" || !alnum(s[0]) {
		return false
	}
	return nameBytes(s)
}

// ValidToolName reports whether s is a valid (un-namespaced) tool name:
// ^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}$, as a loop (the fuzz test holds it
// to the pattern; the repetition alone compiled to 120 KB).
func ValidToolName(s string) bool {
	if s == "" || len(s) > 128 || s[0] == '.' || s[0] == '-' {
		return false
	}
	return nameBytes(s)
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

// nameBytes reports whether every byte of s is in [a-zA-Z0-9_.-].
func nameBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// SplitToolName splits a canonical "<service>.<tool>" at the first dot.
func SplitToolName(canonical string) (service, tool string, ok bool) {
	service, tool, ok = strings.Cut(canonical, ".")
	return service, tool, ok && service != "" && tool != ""
}

// ParseTools decodes and validates tools.json. Zero policy fields take the
// defaults; explicit non-positive values are errors.
func ParseTools(data []byte) (*Tools, error) {
	var raw struct {
		Version int             `json:"version"`
		Tools   []Tool          `json:"tools"`
		Policy  json.RawMessage `json:"policy"`
		Rules   []Rule          `json:"rules"`
	}
	if err := decodeOne(data, &raw); err != nil {
		return nil, fmt.Errorf("tools.json: %w", err)
	}
	m := &Tools{Version: raw.Version, Tools: raw.Tools, Policy: DefaultPolicy(), Rules: raw.Rules}
	if m.Version != ToolsManifestVersion {
		return nil, fmt.Errorf("tools.json: version: unsupported value %d (want %d); recompile with `claw compile`", m.Version, ToolsManifestVersion)
	}
	if len(raw.Policy) > 0 && !bytes.Equal(raw.Policy, []byte("null")) {
		var p struct {
			MaxRounds            *int `json:"max_rounds"`
			TimeoutPerToolMS     *int `json:"timeout_per_tool_ms"`
			TotalTimeoutMS       *int `json:"total_timeout_ms"`
			MaxToolResultBytes   *int `json:"max_tool_result_bytes"`
			MaxToolCallsPerRound *int `json:"max_tool_calls_per_round"`
			MaxToolCallsPerTurn  *int `json:"max_tool_calls_per_turn"`
			MaxParallelCalls     *int `json:"max_parallel_calls"`
			ResultTTLMS          *int `json:"result_ttl_ms"`
		}
		if err := decodeOne(raw.Policy, &p); err != nil {
			return nil, fmt.Errorf("tools.json: policy: %w", err)
		}
		set := func(dst *int, v *int) {
			if v != nil {
				*dst = *v
			}
		}
		set(&m.Policy.MaxRounds, p.MaxRounds)
		set(&m.Policy.TimeoutPerToolMS, p.TimeoutPerToolMS)
		set(&m.Policy.TotalTimeoutMS, p.TotalTimeoutMS)
		set(&m.Policy.MaxToolResultBytes, p.MaxToolResultBytes)
		set(&m.Policy.MaxToolCallsPerRound, p.MaxToolCallsPerRound)
		set(&m.Policy.MaxToolCallsPerTurn, p.MaxToolCallsPerTurn)
		set(&m.Policy.MaxParallelCalls, p.MaxParallelCalls)
		set(&m.Policy.ResultTTLMS, p.ResultTTLMS)
	}
	if err := m.Policy.Validate("tools.json: policy"); err != nil {
		return nil, err
	}
	rules := make(map[string]int, len(m.Rules))
	for i, r := range m.Rules {
		if r.ID == "" || strings.TrimSpace(r.When) == "" {
			return nil, fmt.Errorf("tools.json: rules[%d]: id and when are required", i)
		}
		if j, dup := rules[r.ID]; dup {
			return nil, fmt.Errorf("tools.json: rules[%d].id: %q duplicates rules[%d]", i, r.ID, j)
		}
		rules[r.ID] = i
	}
	seen := make(map[string]int, len(m.Tools))
	for i := range m.Tools {
		if err := m.Tools[i].validate(); err != nil {
			return nil, fmt.Errorf("tools.json: tools[%d]%s", i, err)
		}
		for j, id := range m.Tools[i].When {
			if _, ok := rules[id]; !ok {
				return nil, fmt.Errorf("tools.json: tools[%d].when[%d]: %q names no rule (rules: %d); recompile with `claw compile`", i, j, id, len(m.Rules))
			}
		}
		if j, dup := seen[m.Tools[i].Name]; dup {
			return nil, fmt.Errorf("tools.json: tools[%d].name: %q duplicates tools[%d]", i, m.Tools[i].Name, j)
		}
		seen[m.Tools[i].Name] = i
	}
	return m, nil
}

// validate returns an error whose text starts with the field suffix
// (".name: ...") so ParseTools can prefix the index.
func (t *Tool) validate() error {
	svc, _, ok := SplitToolName(t.Name)
	if !ok {
		return fmt.Errorf(".name: %q must be \"<service>.<tool>\"", t.Name)
	}
	if err := ValidateSchemaObject(t.InputSchema); err != nil {
		return fmt.Errorf(".inputSchema: %v", err)
	}
	if t.Mode != "" && !ValidMode(t.Mode) {
		return fmt.Errorf(".mode: %q must be %q or %q", t.Mode, ModeMediated, ModeNative)
	}
	if len(t.OutputSchema) > 0 {
		if err := ValidateSchemaObject(t.OutputSchema); err != nil {
			return fmt.Errorf(".outputSchema: %v", err)
		}
	}
	e := &t.Execution
	if e.Service == "" {
		return fmt.Errorf(".execution.service: required")
	}
	if e.Service != svc {
		return fmt.Errorf(".execution.service: %q does not match the name's service %q", e.Service, svc)
	}
	if !strings.HasPrefix(e.BaseURL, "http://") && !strings.HasPrefix(e.BaseURL, "https://") {
		return fmt.Errorf(".execution.base_url: %q must be an http:// or https:// URL", e.BaseURL)
	}
	if !strings.HasPrefix(e.Path, "/") {
		return fmt.Errorf(".execution.path: %q must start with /", e.Path)
	}
	switch e.Transport {
	case TransportHTTP:
		switch strings.ToUpper(e.Method) {
		case "GET", "POST", "PUT", "PATCH", "DELETE":
		default:
			return fmt.Errorf(".execution.method: %q must be GET, POST, PUT, PATCH or DELETE", e.Method)
		}
		if e.Body != "" && e.Body != "json" {
			return fmt.Errorf(".execution.body: %q is not supported (use \"json\")", e.Body)
		}
	case TransportMCP:
		if e.ToolName == "" {
			return fmt.Errorf(".execution.tool_name: required for transport mcp")
		}
	default:
		return fmt.Errorf(".execution.transport: %q must be \"http\" or \"mcp\"", e.Transport)
	}
	if e.Auth != nil {
		switch e.Auth.Type {
		case "bearer":
			if e.Auth.Token == "" {
				return fmt.Errorf(".execution.auth.token: required for bearer auth")
			}
		case "none", "":
		default:
			return fmt.Errorf(".execution.auth.type: %q must be \"bearer\" or \"none\"", e.Auth.Type)
		}
	}
	if e.TimeoutMS < 0 {
		return fmt.Errorf(".execution.timeout_ms: must be >= 0")
	}
	if e.Retry != nil && (e.Retry.MaxAttempts < 1 || e.Retry.MaxAttempts > 10) {
		return fmt.Errorf(".execution.retry.max_attempts: must be between 1 and 10")
	}
	return nil
}

// ValidateSchemaObject checks that raw is a JSON object whose "type", when
// present, is "object" — the shape tools' input schemas must have.
func ValidateSchemaObject(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return fmt.Errorf("required (a JSON Schema object)")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return fmt.Errorf("must be a JSON object")
	}
	if t, ok := obj["type"]; ok {
		var s string
		if json.Unmarshal(t, &s) != nil || s != "object" {
			return fmt.Errorf(`"type" must be "object"`)
		}
	}
	return nil
}

func decodeOne(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}
