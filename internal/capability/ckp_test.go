package capability

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// updating reports whether -update was given (the flag is defined once per
// package, in update_flag_test.go).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// TestToolManifestGolden maps every testdata/ckp manifest into the IR and
// compares it with <name>.golden.json.
func TestToolManifestGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "ckp", "*"))
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ms, err := ParseToolManifests(data)
			if err != nil {
				t.Fatalf("ParseToolManifests: %v", err)
			}
			got, err := json.MarshalIndent(ms, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(f, filepath.Ext(f)) + ".golden.json"
			if updating() {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/capability -run ToolManifestGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("mapping differs from %s (run with -update to accept)\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
	if n == 0 {
		t.Fatal("no CKP golden cases")
	}
}

const okSpec = `
claw: "0.3.0"
kind: Tool
metadata: {name: t}
spec:
  description: d
  input_schema: {type: object}
`

// TestToolManifestRules has one failing manifest per rule of spec 001 (and
// of the decoder's own checks); each error must name the field.
func TestToolManifestRules(t *testing.T) {
	cases := []struct {
		name, doc, field, problem string
	}{
		// Spec 001 rule 1: without mcp_source, description and input_schema are required.
		{"description required without mcp_source", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {input_schema: {type: object}}}`, "spec.description", "required when spec.mcp_source is absent"},
		{"blank description", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: "  ", input_schema: {type: object}}}`, "spec.description", "required when spec.mcp_source is absent"},
		{"input_schema required without mcp_source", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d}}`, "spec.input_schema", "required when spec.mcp_source is absent"},
		{"null input_schema", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: null}}`, "spec.input_schema", "required when spec.mcp_source is absent"},
		// Rule 3: input_schema must be a valid JSON Schema object.
		{"input_schema not an object", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: [1]}}`, "spec.input_schema", "must be a JSON object"},
		{"input_schema not for an object", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: {type: string}}}`, "spec.input_schema", `"type" must be "object"`},
		{"input_schema invalid JSON Schema", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: {type: object, properties: {a: {type: 5}}}}}`, "spec.input_schema", "is not a valid JSON Schema"},
		{"input_schema bad required", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: {type: object, required: yes}}}`, "spec.input_schema", "is not a valid JSON Schema"},
		{"input_schema with mcp_source still validated", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "stdio:///s"}, input_schema: {minLength: -1}}}`, "spec.input_schema", "is not a valid JSON Schema"},
		{"output_schema invalid", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: {type: object}, output_schema: {type: nope}}}`, "spec.output_schema", "is not a valid JSON Schema"},
		{"output_schema not an object", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: {type: object}, output_schema: "x"}}`, "spec.output_schema", "must be a JSON object"},
		// MCP compatibility: mcp:// is reserved; sources are stdio:/// or https://.
		{"mcp scheme rejected", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "mcp://server/tool"}}}`, "spec.mcp_source.uri", "reserved mcp:// scheme"},
		{"mcp scheme any case", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "MCP://server"}}}`, "spec.mcp_source.uri", "reserved mcp:// scheme"},
		{"mcp scheme in sandbox_ref", okSpec + "  sandbox_ref: mcp://sandbox\n", "spec.sandbox_ref", "reserved mcp:// scheme"},
		{"mcp scheme in policy_ref", okSpec + "  policy_ref: mcp://policy\n", "spec.policy_ref", "reserved mcp:// scheme"},
		{"http source rejected", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "http://server/mcp"}}}`, "spec.mcp_source.uri", `scheme "http" is not an MCP transport URI`},
		{"relative source rejected", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "server.sh"}}}`, "spec.mcp_source.uri", "is not an MCP transport URI"},
		{"stdio with host", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "stdio://usr/bin/server"}}}`, "spec.mcp_source.uri", "names a host"},
		{"stdio without path", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "stdio:///"}}}`, "spec.mcp_source.uri", "has no server path"},
		{"stdio with query", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "stdio:///s?x=1"}}}`, "spec.mcp_source.uri", "query or fragment"},
		{"https without host", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "https:///mcp"}}}`, "spec.mcp_source.uri", "has no host"},
		{"https with credentials", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "https://u:secret@h/mcp"}}}`, "spec.mcp_source.uri", "carries credentials"},
		{"https with bad port", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "https://h:99999/mcp"}}}`, "spec.mcp_source.uri", "invalid port"},
		{"source uri required", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {tool_name: x}}}`, "spec.mcp_source.uri", "required"},
		{"source not a mapping", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: "stdio:///s"}}`, "spec.mcp_source", "must be a mapping"},
		{"source unknown key", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "stdio:///s", command: x}}}`, "spec.mcp_source.command", "unknown key"},
		{"source tool_name invalid", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {mcp_source: {uri: "stdio:///s", tool_name: "a b"}}}`, "spec.mcp_source.tool_name", "must match"},
		// Document shape.
		{"claw version required", `{kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: {type: object}}}`, "claw", "required"},
		{"claw version unsupported", `{claw: "0.2.0", kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: {type: object}}}`, "claw", `"0.2.0" is not supported`},
		{"claw version not a string", `{claw: 0.3, kind: Tool, metadata: {name: t}, spec: {description: d, input_schema: {type: object}}}`, "claw", "must be a string"},
		{"kind required", `{claw: "0.3.0", metadata: {name: t}, spec: {description: d, input_schema: {type: object}}}`, "kind", "required"},
		{"kind not Tool", `{claw: "0.3.0", kind: Policy, metadata: {name: t}, spec: {}}`, "kind", "only kind: Tool"},
		{"metadata required", `{claw: "0.3.0", kind: Tool, spec: {description: d, input_schema: {type: object}}}`, "metadata", "required"},
		{"name required", `{claw: "0.3.0", kind: Tool, metadata: {version: "1"}, spec: {description: d, input_schema: {type: object}}}`, "metadata.name", "required"},
		{"name invalid", `{claw: "0.3.0", kind: Tool, metadata: {name: "web fetch"}, spec: {description: d, input_schema: {type: object}}}`, "metadata.name", "must match"},
		{"labels not strings", `{claw: "0.3.0", kind: Tool, metadata: {name: t, labels: {a: [1]}}, spec: {description: d, input_schema: {type: object}}}`, "metadata.labels", "must be a string"},
		{"spec required", `{claw: "0.3.0", kind: Tool, metadata: {name: t}}`, "spec", "required"},
		{"spec not a mapping", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: [1]}`, "spec", "must be a mapping"},
		{"unknown top-level key", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {}, extra: 1}`, "extra", "unknown key"},
		{"MCP spelling of input_schema", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: d, inputSchema: {type: object}}}`, "spec.inputSchema", "CKP spells it input_schema"},
		{"description not a string", `{claw: "0.3.0", kind: Tool, metadata: {name: t}, spec: {description: 5, input_schema: {type: object}}}`, "spec.description", "must be a string"},
		// Annotations, timeout, retry.
		{"annotation not a bool", okSpec + "  annotations: {readOnlyHint: maybe}\n", "spec.annotations.readOnlyHint", "must be true or false"},
		{"annotation unknown", okSpec + "  annotations: {safeHint: true}\n", "spec.annotations.safeHint", "unknown key"},
		{"annotations not a mapping", okSpec + "  annotations: [readOnlyHint]\n", "spec.annotations", "must be a mapping"},
		{"parallel_safe not a bool", okSpec + "  annotations: {parallel_safe: often}\n", "spec.annotations.parallel_safe", "must be true or false"},
		{"parallel_safe spellings disagree", okSpec + "  annotations: {parallel_safe: true, parallelSafe: false}\n", "spec.annotations.parallelSafe", "contradicts parallel_safe"},
		{"timeout zero", okSpec + "  timeout_ms: 0\n", "spec.timeout_ms", "whole number > 0"},
		{"timeout negative", okSpec + "  timeout_ms: -5\n", "spec.timeout_ms", "whole number > 0"},
		{"timeout fractional", okSpec + "  timeout_ms: 1.5\n", "spec.timeout_ms", "whole number > 0"},
		{"timeout not a number", okSpec + "  timeout_ms: soon\n", "spec.timeout_ms", "must be a number"},
		{"retry attempts required", okSpec + "  retry: {backoff: fixed}\n", "spec.retry.max_attempts", "required"},
		{"retry attempts zero", okSpec + "  retry: {max_attempts: 0}\n", "spec.retry.max_attempts", "between 1 and 10"},
		{"retry attempts too many", okSpec + "  retry: {max_attempts: 11}\n", "spec.retry.max_attempts", "between 1 and 10"},
		{"retry backoff unknown", okSpec + "  retry: {max_attempts: 2, backoff: linear}\n", "spec.retry.backoff", `"linear" must be "exponential" or "fixed"`},
		{"retry unknown key", okSpec + "  retry: {max_attempts: 2, jitter: true}\n", "spec.retry.jitter", "unknown key"},
		// Files.
		{"duplicate names in a stream", okSpec + "---\n" + okSpec, "documents[1].metadata.name", "duplicates documents[0]"},
		{"error in second document", okSpec + "---\n" + `{claw: "0.3.0", kind: Tool, metadata: {name: u}, spec: {description: d}}`, "documents[1].spec.input_schema", "required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseToolManifests([]byte(c.doc))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.doc)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %q is not a FieldError", err)
			}
			if fe.Field != c.field {
				t.Errorf("field = %q, want %q (error: %v)", fe.Field, c.field, err)
			}
			if !strings.Contains(fe.Problem, c.problem) {
				t.Errorf("problem = %q, want it to contain %q", fe.Problem, c.problem)
			}
		})
	}
}

// A Tool manifest marks its tool parallel-safe in either spelling.
func TestToolManifestParallelSafe(t *testing.T) {
	for _, c := range []struct {
		annotations string
		want        bool
	}{
		{"{readOnlyHint: true}", false},
		{"{parallel_safe: true}", true},
		{"{parallelSafe: true}", true},
		{"{parallel_safe: true, parallelSafe: true}", true},
		{"{parallelSafe: false}", false},
	} {
		ms, err := ParseToolManifests([]byte(okSpec + "  annotations: " + c.annotations + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.annotations, err)
		}
		if got := ms[0].Tool.Annotations.IsParallelSafe(); got != c.want {
			t.Errorf("%s: parallel-safe %v, want %v", c.annotations, got, c.want)
		}
	}
}

// TestToolManifestFileErrors covers inputs that are not manifests at all.
func TestToolManifestFileErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":        "",
		"comment only": "# nothing\n",
		"bad yaml":     "claw: [\n",
		"scalar":       "hello",
		"bad json":     "[{]",
		"merge key":    "base: &b {claw: \"0.3.0\"}\ndoc:\n  <<: *b\n",
		"int key":      "1: a\n",
		"dup key":      "claw: a\nclaw: b\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseToolManifests([]byte(doc)); err == nil {
				t.Fatalf("accepted %q", doc)
			}
		})
	}
}

// TestToolManifestComplete: absent description and input_schema come from
// the server's tools/list entry; a manifest needing them fails without one.
func TestToolManifestComplete(t *testing.T) {
	ms, err := ParseToolManifests([]byte(`{claw: "0.3.0", kind: Tool, metadata: {name: fs-read}, spec: {mcp_source: {uri: "stdio:///fs", tool_name: read_file}, timeout_ms: 100}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := ms[0]
	if m.RemoteName() != "read_file" || !m.NeedsSnapshot() {
		t.Fatalf("RemoteName %q NeedsSnapshot %v", m.RemoteName(), m.NeedsSnapshot())
	}
	if _, err := m.Complete(nil); err == nil || !strings.Contains(err.Error(), `does not list tool "read_file"`) {
		t.Fatalf("Complete(nil) = %v", err)
	}
	ro := true
	listed := &Tool{Name: "read_file", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &manifest.Annotations{ReadOnlyHint: &ro}}
	got, err := m.Complete(listed)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "fs-read" || got.RemoteName != "read_file" || got.Description != "Read a file." || string(got.InputSchema) != `{"type":"object"}` || !got.Annotations.IsReadOnly() || got.TimeoutMS != 100 {
		t.Fatalf("completed tool = %+v", got)
	}
	got.Annotations.ReadOnlyHint = nil
	if listed.Annotations.ReadOnlyHint == nil {
		t.Fatal("Complete aliased the snapshot's annotations")
	}
}
