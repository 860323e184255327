package capability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// MaxDescriptorBytes bounds a descriptor file; larger inputs are rejected
// before decoding.
const MaxDescriptorBytes = 4 << 20

// wireDescriptor is the JSON shape of `claw.describe`. Unknown top-level
// fields (for example discovery metadata written by `claw discover`) are
// ignored so newer descriptors still load.
type wireDescriptor struct {
	Version     *int            `json:"version"`
	Description string          `json:"description"`
	Tools       []wireTool      `json:"tools"`
	Feeds       []wireFeed      `json:"feeds"`
	Skill       json.RawMessage `json:"skill"`
	Endpoints   []wireEndpoint  `json:"endpoints"`
	Auth        *wireAuth       `json:"auth"`
	MCP         *wireMCP        `json:"mcp"`
}

type wireTool struct {
	Name         string           `json:"name"`
	Description  string           `json:"description"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema"`
	Annotations  *wireAnnotations `json:"annotations"`
	HTTP         *wireHTTP        `json:"http"`
	TimeoutMS    int              `json:"timeout_ms"`
	Retry        *manifest.Retry  `json:"retry"`
}

// wireAnnotations are a tool's annotations as a descriptor writes them:
// manifest.Annotations, parallel_safe also accepted in MCP's camelCase
// spelling (parallelSafe).
type wireAnnotations struct {
	manifest.Annotations
	ParallelSafeCamel *bool `json:"parallelSafe"`
}

// annotations returns w as the IR's annotations (nil when absent).
func (w *wireAnnotations) annotations(tool string) (*manifest.Annotations, error) {
	if w == nil {
		return nil, nil
	}
	a := w.Annotations
	ps, err := parallelSafe(a.ParallelSafe, w.ParallelSafeCamel)
	if err != nil {
		return nil, fieldErr(".annotations.parallelSafe", "%v (tool %q)", err, tool)
	}
	a.ParallelSafe = ps
	return &a, nil
}

// parallelSafe is the one value of the parallel_safe annotation written
// as parallel_safe, parallelSafe or both (then they must agree).
func parallelSafe(snake, camel *bool) (*bool, error) {
	switch {
	case camel == nil:
		return snake, nil
	case snake != nil && *snake != *camel:
		return nil, errors.New("contradicts parallel_safe; write one of the two")
	}
	return camel, nil
}

type wireHTTP struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	Body    string `json:"body"`
	BodyKey string `json:"body_key"`
}

type wireFeed struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	TTL         *int   `json:"ttl"`
	Description string `json:"description"`
}

type wireEndpoint struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Description string `json:"description"`
}

type wireAuth struct {
	Type string `json:"type"`
	Env  string `json:"env"`
}

type wireMCP struct {
	Transport string `json:"transport"`
	Path      string `json:"path"`
}

var (
	feedNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,127}$`)
	envNamePattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ParseDescriptor decodes and validates a `claw.describe` document
// (version 1 or 2). Errors name the offending field and how to fix it.
func ParseDescriptor(data []byte) (*Descriptor, error) {
	if len(data) > MaxDescriptorBytes {
		return nil, fmt.Errorf("descriptor is %d bytes; the limit is %d", len(data), MaxDescriptorBytes)
	}
	var w wireDescriptor
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("not a valid JSON descriptor object: %s", JSONError(data, err))
	}
	if dec.More() {
		return nil, errors.New("trailing data after the descriptor object")
	}
	d := &Descriptor{Version: 1, Description: w.Description}
	if w.Version != nil {
		d.Version = *w.Version
	}
	if d.Version != 1 && d.Version != 2 {
		return nil, fieldErr("version", "unsupported value %d; use 1 or 2", d.Version)
	}
	if d.Version < 2 && len(w.Tools) > 0 {
		return nil, fieldErr("tools", `needs descriptor version 2; set "version": 2`)
	}
	if d.Version < 2 && w.MCP != nil {
		return nil, fieldErr("mcp", `needs descriptor version 2; set "version": 2`)
	}
	if w.MCP != nil {
		m, err := decodeMCP(w.MCP)
		if err != nil {
			return nil, err
		}
		d.MCP = m
	}
	tools, err := decodeTools(w.Tools, d.MCP != nil)
	if err != nil {
		return nil, err
	}
	d.Tools = tools
	feedSeen := make(map[string]int, len(w.Feeds))
	for i, wf := range w.Feeds {
		f, err := decodeFeed(wf)
		if err != nil {
			return nil, prefixField(fmt.Sprintf("feeds[%d]", i), err)
		}
		if j, dup := feedSeen[f.Name]; dup {
			return nil, fieldErr(fmt.Sprintf("feeds[%d].name", i), "%q duplicates feeds[%d]; feed names must be unique", f.Name, j)
		}
		feedSeen[f.Name] = i
		d.Feeds = append(d.Feeds, f)
	}
	for i, we := range w.Endpoints {
		method := strings.ToUpper(strings.TrimSpace(we.Method))
		if method == "" {
			method = "GET"
		}
		if !validMethod(method) && method != "HEAD" && method != "OPTIONS" {
			return nil, fieldErr(fmt.Sprintf("endpoints[%d].method", i), "%q is not an HTTP method", we.Method)
		}
		if !strings.HasPrefix(we.Path, "/") {
			return nil, fieldErr(fmt.Sprintf("endpoints[%d].path", i), "%q must start with /", we.Path)
		}
		d.Endpoints = append(d.Endpoints, Endpoint{Method: method, Path: we.Path, Description: we.Description})
	}
	skill, err := decodeSkill(w.Skill)
	if err != nil {
		return nil, err
	}
	d.Skill = skill
	if w.Auth != nil {
		a, err := decodeAuth(w.Auth)
		if err != nil {
			return nil, err
		}
		d.Auth = a
	}
	return d, nil
}

func decodeMCP(w *wireMCP) (*MCP, error) {
	m := &MCP{Transport: w.Transport, Path: w.Path}
	switch m.Transport {
	case "", TransportStreamableHTTP, "http", "streamable-http":
		m.Transport = TransportStreamableHTTP
	default:
		return nil, fieldErr("mcp.transport", "%q is not supported; use %q (wrap stdio servers with claw-mcp-stdio)", w.Transport, TransportStreamableHTTP)
	}
	if m.Path == "" {
		m.Path = DefaultMCPPath
	}
	if !strings.HasPrefix(m.Path, "/") {
		return nil, fieldErr("mcp.path", "%q must start with /", w.Path)
	}
	return m, nil
}

// decodeTools decodes a tools array; tool names must be unique.
func decodeTools(ws []wireTool, viaMCP bool) ([]Tool, error) {
	var tools []Tool
	seen := make(map[string]int, len(ws))
	for i, wt := range ws {
		t, err := decodeTool(wt, viaMCP)
		if err != nil {
			return nil, prefixField(fmt.Sprintf("tools[%d]", i), err)
		}
		if j, dup := seen[t.Name]; dup {
			return nil, fieldErr(fmt.Sprintf("tools[%d].name", i), "%q duplicates tools[%d]; tool names must be unique", t.Name, j)
		}
		seen[t.Name] = i
		tools = append(tools, t)
	}
	return tools, nil
}

// decodeTool returns errors that start with the field suffix (".name: …").
func decodeTool(w wireTool, viaMCP bool) (Tool, error) {
	t := Tool{
		Name: w.Name, Description: w.Description,
		TimeoutMS: w.TimeoutMS, Retry: w.Retry,
	}
	if w.Name == "" {
		return t, fieldErr(".name", "required")
	}
	if !manifest.ValidToolName(w.Name) {
		return t, fieldErr(".name", "%q must match [a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}", w.Name)
	}
	var err error
	if t.Annotations, err = w.Annotations.annotations(w.Name); err != nil {
		return t, err
	}
	if err := checkSchema(w.InputSchema, true); err != nil {
		return t, fieldErr(".inputSchema", "%v (tool %q)", err, w.Name)
	}
	t.InputSchema = compactJSON(w.InputSchema)
	if len(bytes.TrimSpace(w.OutputSchema)) > 0 && !bytes.Equal(bytes.TrimSpace(w.OutputSchema), []byte("null")) {
		if err := checkSchema(w.OutputSchema, false); err != nil {
			return t, fieldErr(".outputSchema", "%v (tool %q)", err, w.Name)
		}
		t.OutputSchema = compactJSON(w.OutputSchema)
	}
	if w.TimeoutMS < 0 {
		return t, fieldErr(".timeout_ms", "must be >= 0 (tool %q)", w.Name)
	}
	if w.Retry != nil && (w.Retry.MaxAttempts < 1 || w.Retry.MaxAttempts > 10) {
		return t, fieldErr(".retry.max_attempts", "must be between 1 and 10 (tool %q)", w.Name)
	}
	if w.Retry != nil && w.Retry.Backoff != "" && w.Retry.Backoff != "exponential" && w.Retry.Backoff != "fixed" {
		return t, fieldErr(".retry.backoff", "%q must be \"exponential\" or \"fixed\" (tool %q)", w.Retry.Backoff, w.Name)
	}
	if w.HTTP == nil {
		if !viaMCP {
			return t, fieldErr(".http", "required (or declare a top-level \"mcp\" endpoint): add {\"method\": \"GET\", \"path\": \"/...\"} (tool %q)", w.Name)
		}
		return t, nil
	}
	method := strings.ToUpper(strings.TrimSpace(w.HTTP.Method))
	if !validMethod(method) {
		return t, fieldErr(".http.method", "%q must be GET, POST, PUT, PATCH or DELETE (tool %q)", w.HTTP.Method, w.Name)
	}
	if !strings.HasPrefix(w.HTTP.Path, "/") {
		return t, fieldErr(".http.path", "%q must start with / (tool %q)", w.HTTP.Path, w.Name)
	}
	if err := checkPlaceholders(w.HTTP.Path); err != nil {
		return t, fieldErr(".http.path", "%v (tool %q)", err, w.Name)
	}
	if w.HTTP.Body != "" && w.HTTP.Body != "json" {
		return t, fieldErr(".http.body", "%q is not supported; use \"json\" (tool %q)", w.HTTP.Body, w.Name)
	}
	t.HTTP = &HTTPCall{Method: method, Path: w.HTTP.Path, Body: w.HTTP.Body, BodyKey: w.HTTP.BodyKey}
	return t, nil
}

// DefaultFeedTTL is a feed's TTL in seconds when its declaration gives
// none, in a descriptor or in the pod's explicit feed form.
const DefaultFeedTTL = 60

func decodeFeed(w wireFeed) (Feed, error) {
	f := Feed{Name: w.Name, Path: w.Path, TTL: DefaultFeedTTL, Description: w.Description}
	if w.Name == "" {
		return f, fieldErr(".name", "required")
	}
	if !feedNamePattern.MatchString(w.Name) {
		return f, fieldErr(".name", "%q must match [a-zA-Z0-9][a-zA-Z0-9_.-]*", w.Name)
	}
	if !strings.HasPrefix(w.Path, "/") {
		return f, fieldErr(".path", "%q must start with / (feed %q)", w.Path, w.Name)
	}
	if w.TTL != nil {
		if *w.TTL < 0 {
			return f, fieldErr(".ttl", "must be >= 0 seconds (feed %q)", w.Name)
		}
		f.TTL = *w.TTL
	}
	return f, nil
}

func decodeSkill(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		// Some descriptors give {"path": "..."}.
		var obj struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(raw, &obj) != nil || obj.Path == "" {
			return "", fieldErr("skill", `must be a path string such as "skills/service.md"`)
		}
		s = obj.Path
	}
	if s == "" {
		return "", nil
	}
	clean := path.Clean(strings.TrimPrefix(s, "./"))
	if clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(s, 0) {
		return "", fieldErr("skill", "%q must not leave the descriptor's directory", s)
	}
	return s, nil
}

func decodeAuth(w *wireAuth) (*Auth, error) {
	a := &Auth{Type: strings.ToLower(w.Type), Env: w.Env}
	if a.Type == "" {
		a.Type = AuthBearer
	}
	switch a.Type {
	case AuthNone:
		return a, nil
	case AuthBearer:
		if !envNamePattern.MatchString(a.Env) {
			return nil, fieldErr("auth.env", "%q must name the environment variable holding the bearer token", w.Env)
		}
		return a, nil
	default:
		return nil, fieldErr("auth.type", "%q must be \"bearer\" or \"none\"", w.Type)
	}
}

func validMethod(m string) bool {
	switch m {
	case "GET", "POST", "PUT", "PATCH", "DELETE":
		return true
	}
	return false
}

// checkPlaceholders rejects unbalanced or empty {placeholders}.
func checkPlaceholders(p string) error {
	open := false
	start := 0
	for i, r := range p {
		switch r {
		case '{':
			if open {
				return errors.New("nested '{'")
			}
			open, start = true, i
		case '}':
			if !open {
				return errors.New("'}' without '{'")
			}
			if i == start+1 {
				return errors.New("empty placeholder {}")
			}
			open = false
		}
	}
	if open {
		return errors.New("unclosed '{'")
	}
	return nil
}

// compactJSON returns raw without insignificant whitespace so compiled
// manifests do not depend on the descriptor's formatting.
func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// JSONError describes a JSON decoding error of data with the line and
// column it happened at, when the error says where.
func JSONError(data []byte, err error) string {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err.Error()
	}
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}
