package capability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// CKP `Tool` manifests (spec 001): a YAML (or JSON) document
//
//	claw: "0.3.0"
//	kind: Tool
//	metadata: {name, version, labels}
//	spec: {description, input_schema, output_schema, mcp_source {uri,
//	       tool_name}, annotations (MCP hints, readOnly, parallel_safe),
//	       timeout_ms, retry {max_attempts, backoff}, sandbox_ref,
//	       policy_ref}
//
// mapped into the same Tool IR as descriptor tools.

// CKPVersion is the CKP version whose Tool primitive this package reads.
const CKPVersion = "0.3.0"

// CKPKindTool is the kind of a Tool manifest.
const CKPKindTool = "Tool"

// MCP source schemes a CKP manifest may use (spec 001 "MCP Compatibility").
const (
	SourceStdio = "stdio"
	SourceHTTPS = "https"
)

// ToolManifest is one validated CKP Tool manifest.
type ToolManifest struct {
	// Tool is the IR tool. Description and InputSchema are empty when the
	// manifest leaves them to the MCP server (Source set); see Complete.
	Tool Tool
	// Version and Labels are metadata.version and metadata.labels.
	Version string
	Labels  map[string]string
	// Source is spec.mcp_source; nil when absent.
	Source *MCPSource
	// SandboxRef and PolicyRef name execution constraints (spec 001); this
	// runtime records but does not enforce them.
	SandboxRef string
	PolicyRef  string
	// Document is the manifest's index in its file (YAML streams may hold
	// several), from 0.
	Document int
}

// MCPSource is a CKP mcp_source: where the tool's MCP server is.
type MCPSource struct {
	// URI is as written.
	URI string
	// Scheme is SourceStdio or SourceHTTPS.
	Scheme string
	// Command is the stdio server's path (stdio:///path → /path).
	Command string
	// ToolName is the tool's name on the server; empty means the manifest's
	// metadata.name.
	ToolName string
}

// RemoteName is the tool's name on its MCP server.
func (m *ToolManifest) RemoteName() string {
	if m.Tool.RemoteName != "" {
		return m.Tool.RemoteName
	}
	return m.Tool.Name
}

// NeedsSnapshot reports whether the manifest leaves description or
// input_schema to the server's tools/list.
func (m *ToolManifest) NeedsSnapshot() bool {
	return m.Tool.Description == "" || len(m.Tool.InputSchema) == 0
}

// Complete returns the manifest's tool with absent description,
// input_schema (and output_schema and annotations) taken from listed, the
// server's entry for RemoteName in its tools/list snapshot (spec 001: "the
// runtime MUST obtain them from the MCP server via tools/list"). listed may
// be nil when the manifest needs nothing from it.
func (m *ToolManifest) Complete(listed *Tool) (Tool, error) {
	t := m.Tool
	if !m.NeedsSnapshot() {
		return t, nil
	}
	if listed == nil {
		missing := "spec.description"
		if len(t.InputSchema) == 0 {
			missing = "spec.input_schema"
		}
		return t, fieldErr(missing, "absent, and the MCP server's tools/list snapshot does not list tool %q", m.RemoteName())
	}
	if t.Description == "" {
		t.Description = listed.Description
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = listed.InputSchema
	}
	if len(t.OutputSchema) == 0 {
		t.OutputSchema = listed.OutputSchema
	}
	if t.Annotations == nil && listed.Annotations != nil {
		a := *listed.Annotations
		t.Annotations = &a
	}
	if len(t.InputSchema) == 0 {
		return t, fieldErr("spec.input_schema", "absent, and the server lists tool %q without an inputSchema", m.RemoteName())
	}
	return t, nil
}

// wire types: every field a pointer or raw value, so "absent" and "empty"
// differ and types are checked with field names.
type ckpDoc struct {
	Claw     json.RawMessage `json:"claw"`
	Kind     json.RawMessage `json:"kind"`
	Metadata json.RawMessage `json:"metadata"`
	Spec     json.RawMessage `json:"spec"`
}

type ckpMetadata struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Labels  map[string]string `json:"labels"`
}

type ckpSpec struct {
	Description  *string         `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	SandboxRef   string          `json:"sandbox_ref"`
	PolicyRef    string          `json:"policy_ref"`
	MCPSource    json.RawMessage `json:"mcp_source"`
	Annotations  json.RawMessage `json:"annotations"`
	TimeoutMS    json.RawMessage `json:"timeout_ms"`
	Retry        json.RawMessage `json:"retry"`
}

type ckpSource struct {
	URI      string `json:"uri"`
	ToolName string `json:"tool_name"`
}

type ckpRetry struct {
	MaxAttempts json.RawMessage `json:"max_attempts"`
	Backoff     string          `json:"backoff"`
}

var (
	ckpTopKeys    = []string{"claw", "kind", "metadata", "spec"}
	ckpSpecKeys   = []string{"description", "input_schema", "output_schema", "sandbox_ref", "policy_ref", "mcp_source", "annotations", "timeout_ms", "retry"}
	ckpSourceKeys = []string{"uri", "tool_name"}
	ckpRetryKeys  = []string{"max_attempts", "backoff"}
	ckpAnnotKeys  = []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "readOnly", "parallel_safe", "parallelSafe"}
)

// MaxToolManifestDocs bounds the documents of one manifest file.
const MaxToolManifestDocs = 1000

// ParseToolManifests decodes and validates a CKP Tool manifest file: YAML
// (one document or a `---` stream) or JSON (an object, or an array of
// objects). Errors are *FieldError naming the field ("spec.input_schema";
// "documents[2].spec.retry.backoff" in multi-document files) and the tool.
// Tool names must be unique within the file.
func ParseToolManifests(data []byte) ([]ToolManifest, error) {
	if len(data) > MaxDescriptorBytes {
		return nil, fmt.Errorf("manifest is %d bytes; the limit is %d", len(data), MaxDescriptorBytes)
	}
	docs, err := ckpDocuments(data)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, errors.New(`no manifest in the file; write a CKP Tool (claw: "0.3.0", kind: Tool, metadata, spec)`)
	}
	out := make([]ToolManifest, 0, len(docs))
	seen := map[string]int{}
	for i, doc := range docs {
		prefix := ""
		if len(docs) > 1 {
			prefix = fmt.Sprintf("documents[%d].", i)
		}
		m, err := parseToolManifest(doc)
		if err != nil {
			if prefix != "" {
				err = prefixField(prefix, err)
			}
			return nil, err
		}
		if j, dup := seen[m.Tool.Name]; dup {
			return nil, fieldErr(prefix+"metadata.name", "%q duplicates documents[%d]; tool names must be unique", m.Tool.Name, j)
		}
		seen[m.Tool.Name] = i
		m.Document = i
		out = append(out, m)
	}
	return out, nil
}

func parseToolManifest(raw json.RawMessage) (ToolManifest, error) {
	var m ToolManifest
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return m, errors.New(`a manifest must be a mapping with claw, kind, metadata and spec`)
	}
	if err := unknownKeys("", top, ckpTopKeys); err != nil {
		return m, err
	}
	var doc ckpDoc
	_ = json.Unmarshal(raw, &doc)
	claw, err := requiredString("claw", doc.Claw, `write claw: "`+CKPVersion+`"`)
	if err != nil {
		return m, err
	}
	if claw != CKPVersion {
		return m, fieldErr("claw", "%q is not supported; this runtime reads CKP %q", claw, CKPVersion)
	}
	kind, err := requiredString("kind", doc.Kind, "write kind: Tool")
	if err != nil {
		return m, err
	}
	if kind != CKPKindTool {
		return m, fieldErr("kind", "%q is not a tool manifest; only kind: %s is accepted here", kind, CKPKindTool)
	}
	if isAbsent(doc.Metadata) {
		return m, fieldErr("metadata", "required: a mapping with the tool's name")
	}
	var md ckpMetadata
	if err := json.Unmarshal(doc.Metadata, &md); err != nil {
		return m, typeErr("metadata", err, "must be a mapping with name (string), version (string) and labels (string values)")
	}
	if md.Name == "" {
		return m, fieldErr("metadata.name", "required: the tool's name")
	}
	if !manifest.ValidToolName(md.Name) {
		return m, fieldErr("metadata.name", "%q must match [a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}", md.Name)
	}
	name := md.Name
	m.Tool.Name, m.Version, m.Labels = name, md.Version, md.Labels
	if isAbsent(doc.Spec) {
		return m, fieldErr("spec", "required (tool %q)", name)
	}
	var specKeys map[string]json.RawMessage
	if err := json.Unmarshal(doc.Spec, &specKeys); err != nil || specKeys == nil {
		return m, fieldErr("spec", "must be a mapping (tool %q)", name)
	}
	if err := unknownKeys("spec", specKeys, ckpSpecKeys); err != nil {
		return m, withTool(err, name)
	}
	var spec ckpSpec
	if err := json.Unmarshal(doc.Spec, &spec); err != nil {
		return m, withTool(typeErr("spec", err, "must be a mapping"), name)
	}

	// mcp:// is reserved (spec 001 "MCP Compatibility").
	for _, ref := range []struct{ field, v string }{{"spec.sandbox_ref", spec.SandboxRef}, {"spec.policy_ref", spec.PolicyRef}} {
		if isMCPScheme(ref.v) {
			return m, fieldErr(ref.field, "%q uses the reserved mcp:// scheme, which MUST NOT be used (tool %q)", ref.v, name)
		}
	}
	m.SandboxRef, m.PolicyRef = spec.SandboxRef, spec.PolicyRef

	if !isAbsent(spec.MCPSource) {
		src, err := parseSource(spec.MCPSource, name)
		if err != nil {
			return m, err
		}
		m.Source = src
		if src.ToolName != "" && src.ToolName != name {
			m.Tool.RemoteName = src.ToolName
		}
		if src.Scheme == SourceHTTPS {
			u, _ := url.Parse(src.URI)
			p := u.EscapedPath()
			if p == "" || p == "/" {
				p = DefaultMCPPath
			}
			m.Tool.Endpoint = &ToolEndpoint{BaseURL: "https://" + u.Host, Path: p}
		}
	}

	// Rule 1: without mcp_source, description and input_schema are required.
	if spec.Description != nil {
		m.Tool.Description = *spec.Description
	}
	if m.Source == nil && strings.TrimSpace(m.Tool.Description) == "" {
		return m, fieldErr("spec.description", "required when spec.mcp_source is absent (tool %q)", name)
	}
	if isAbsent(spec.InputSchema) {
		if m.Source == nil {
			return m, fieldErr("spec.input_schema", "required when spec.mcp_source is absent: a JSON Schema object for the arguments (tool %q)", name)
		}
	} else {
		// Rule 3: input_schema must be a valid JSON Schema object.
		if err := checkSchema(spec.InputSchema, true); err != nil {
			return m, fieldErr("spec.input_schema", "%v (tool %q)", err, name)
		}
		m.Tool.InputSchema = compactJSON(spec.InputSchema)
	}
	if !isAbsent(spec.OutputSchema) {
		if err := checkSchema(spec.OutputSchema, false); err != nil {
			return m, fieldErr("spec.output_schema", "%v (tool %q)", err, name)
		}
		m.Tool.OutputSchema = compactJSON(spec.OutputSchema)
	}
	if !isAbsent(spec.Annotations) {
		a, err := parseAnnotations(spec.Annotations, name)
		if err != nil {
			return m, err
		}
		m.Tool.Annotations = a
	}
	if !isAbsent(spec.TimeoutMS) {
		n, err := positiveInt(spec.TimeoutMS)
		if err != nil {
			return m, fieldErr("spec.timeout_ms", "%v: the tool's time limit in milliseconds (tool %q)", err, name)
		}
		m.Tool.TimeoutMS = n
	}
	if !isAbsent(spec.Retry) {
		r, err := parseRetry(spec.Retry, name)
		if err != nil {
			return m, err
		}
		m.Tool.Retry = r
	}
	return m, nil
}

func parseSource(raw json.RawMessage, name string) (*MCPSource, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return nil, fieldErr("spec.mcp_source", "must be a mapping with uri (and optionally tool_name) (tool %q)", name)
	}
	if err := unknownKeys("spec.mcp_source", keys, ckpSourceKeys); err != nil {
		return nil, withTool(err, name)
	}
	var s ckpSource
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, withTool(typeErr("spec.mcp_source", err, "must be a mapping"), name)
	}
	if s.ToolName != "" && !manifest.ValidToolName(s.ToolName) {
		return nil, fieldErr("spec.mcp_source.tool_name", "%q must match [a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127} (tool %q)", s.ToolName, name)
	}
	const fix = "use stdio:///path/to/server or https://host/path"
	if s.URI == "" {
		return nil, fieldErr("spec.mcp_source.uri", "required: %s (tool %q)", fix, name)
	}
	if isMCPScheme(s.URI) {
		return nil, fieldErr("spec.mcp_source.uri", "%q uses the reserved mcp:// scheme, which MUST NOT be used; %s (tool %q)", s.URI, fix, name)
	}
	u, err := url.Parse(s.URI)
	if err != nil {
		return nil, fieldErr("spec.mcp_source.uri", "%q is not a URI: %v; %s (tool %q)", s.URI, err, fix, name)
	}
	src := &MCPSource{URI: s.URI, ToolName: s.ToolName}
	switch strings.ToLower(u.Scheme) {
	case SourceStdio:
		if u.Host != "" || u.User != nil {
			return nil, fieldErr("spec.mcp_source.uri", "%q names a host; stdio URIs have three slashes and a path: stdio:///path/to/server (tool %q)", s.URI, name)
		}
		if u.Opaque != "" || u.Path == "" || u.Path == "/" {
			return nil, fieldErr("spec.mcp_source.uri", "%q has no server path; write stdio:///path/to/server (tool %q)", s.URI, name)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return nil, fieldErr("spec.mcp_source.uri", "%q has a query or fragment; stdio URIs are a path only (tool %q)", s.URI, name)
		}
		src.Scheme, src.Command = SourceStdio, path.Clean(u.Path)
	case SourceHTTPS:
		if u.Host == "" || u.Hostname() == "" {
			return nil, fieldErr("spec.mcp_source.uri", "%q has no host; write https://host[:port]/path (tool %q)", s.URI, name)
		}
		if u.User != nil {
			return nil, fieldErr("spec.mcp_source.uri", "%q carries credentials; remove them (cllama presents the service's bearer) (tool %q)", redactURI(u), name)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return nil, fieldErr("spec.mcp_source.uri", "%q has a query or fragment, which MCP endpoints do not take (tool %q)", s.URI, name)
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return nil, fieldErr("spec.mcp_source.uri", "%q has an invalid port (tool %q)", s.URI, name)
			}
		}
		src.Scheme = SourceHTTPS
	default:
		return nil, fieldErr("spec.mcp_source.uri", "%q: scheme %q is not an MCP transport URI; %s (tool %q)", s.URI, u.Scheme, fix, name)
	}
	return src, nil
}

func parseAnnotations(raw json.RawMessage, name string) (*manifest.Annotations, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return nil, fieldErr("spec.annotations", "must be a mapping of MCP annotation hints (tool %q)", name)
	}
	if err := unknownKeys("spec.annotations", keys, ckpAnnotKeys); err != nil {
		return nil, withTool(err, name)
	}
	var a manifest.Annotations
	var parallelCamel *bool
	for _, k := range sortedRawKeys(keys) {
		v := keys[k]
		if k == "title" {
			if err := json.Unmarshal(v, &a.Title); err != nil {
				return nil, fieldErr("spec.annotations.title", "must be a string (tool %q)", name)
			}
			continue
		}
		var b *bool
		if err := json.Unmarshal(v, &b); err != nil {
			return nil, fieldErr("spec.annotations."+k, "must be true or false (tool %q)", name)
		}
		switch k {
		case "readOnlyHint":
			a.ReadOnlyHint = b
		case "destructiveHint":
			a.DestructiveHint = b
		case "idempotentHint":
			a.IdempotentHint = b
		case "openWorldHint":
			a.OpenWorldHint = b
		case "readOnly":
			a.ReadOnly = b
		case "parallel_safe":
			a.ParallelSafe = b
		case "parallelSafe":
			parallelCamel = b
		}
	}
	ps, err := parallelSafe(a.ParallelSafe, parallelCamel)
	if err != nil {
		return nil, fieldErr("spec.annotations.parallelSafe", "%v (tool %q)", err, name)
	}
	a.ParallelSafe = ps
	return &a, nil
}

func parseRetry(raw json.RawMessage, name string) (*manifest.Retry, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return nil, fieldErr("spec.retry", "must be a mapping with max_attempts and backoff (tool %q)", name)
	}
	if err := unknownKeys("spec.retry", keys, ckpRetryKeys); err != nil {
		return nil, withTool(err, name)
	}
	var r ckpRetry
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, withTool(typeErr("spec.retry", err, "must be a mapping"), name)
	}
	if isAbsent(r.MaxAttempts) {
		return nil, fieldErr("spec.retry.max_attempts", "required: the number of attempts, 1 to 10 (tool %q)", name)
	}
	n, err := positiveInt(r.MaxAttempts)
	if err != nil || n > 10 {
		return nil, fieldErr("spec.retry.max_attempts", "must be a whole number between 1 and 10 (tool %q)", name)
	}
	switch r.Backoff {
	case "", "exponential", "fixed":
	default:
		return nil, fieldErr("spec.retry.backoff", "%q must be \"exponential\" or \"fixed\" (tool %q)", r.Backoff, name)
	}
	return &manifest.Retry{MaxAttempts: n, Backoff: r.Backoff}, nil
}

// positiveInt accepts a JSON number that is a whole number > 0 and fits an
// int32 (timeouts and attempt counts).
func positiveInt(raw json.RawMessage) (int, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, errors.New("must be a number")
	}
	if f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
		return 0, errors.New("must be a whole number > 0")
	}
	return int(f), nil
}

func requiredString(field string, raw json.RawMessage, fix string) (string, error) {
	if isAbsent(raw) {
		return "", fieldErr(field, "required; %s", fix)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fieldErr(field, "must be a string; %s", fix)
	}
	return s, nil
}

func unknownKeys(prefix string, m map[string]json.RawMessage, known []string) error {
	for _, k := range sortedRawKeys(m) {
		found := false
		for _, kn := range known {
			found = found || k == kn
		}
		if !found {
			field := k
			if prefix != "" {
				field = prefix + "." + k
			}
			hint := ""
			switch k {
			case "inputSchema":
				hint = "; CKP spells it input_schema"
			case "outputSchema":
				hint = "; CKP spells it output_schema"
			}
			return fieldErr(field, "unknown key (known: %s)%s", strings.Join(known, ", "), hint)
		}
	}
	return nil
}

func withTool(err error, name string) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: fe.Field, Problem: fmt.Sprintf("%s (tool %q)", fe.Problem, name)}
	}
	return err
}

func sortedRawKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isAbsent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

func isMCPScheme(s string) bool {
	return len(s) >= 6 && strings.EqualFold(s[:6], "mcp://")
}

func redactURI(u *url.URL) string {
	c := *u
	c.User = url.User("REDACTED")
	return c.String()
}

// typeErr turns encoding/json's type errors into a FieldError at the
// offending key ("spec.description: must be a string, not number").
func typeErr(prefix string, err error, fallback string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fieldErr(prefix+"."+te.Field, "must be %s, not %s", jsonKind(te.Type.Kind().String()), te.Value)
	}
	return fieldErr(prefix, "%s", fallback)
}

func jsonKind(k string) string {
	switch k {
	case "map", "struct":
		return "a mapping"
	case "slice":
		return "a list"
	case "ptr":
		return "a value"
	case "int", "int64", "float64":
		return "a number"
	}
	return "a " + k
}
