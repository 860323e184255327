package compile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/clawdapus/clawgo/internal/capability"
	"github.com/clawdapus/clawgo/internal/pod"
)

// SourceToolManifest is the descriptor kind of a service whose tools come
// only from CKP Tool manifests (x-claw.tool-manifests).
const SourceToolManifest = "tool-manifest"

// envMCPStdioPath is the wrapper's MCP endpoint path variable.
const envMCPStdioPath = "CLAW_MCP_STDIO_PATH"

// withToolManifests merges the CKP Tool manifests of svc (spec 001,
// x-claw.tool-manifests) into its descriptor sd, which may be nil. A
// manifest tool replaces a descriptor tool of the same name (keeping its
// place) or is appended. Execution:
//   - mcp_source stdio:///…: through the service's claw-mcp-stdio wrapper,
//     so the service must declare x-claw.mcp-stdio;
//   - mcp_source https://…: cllama's MCP executor at that endpoint;
//   - no mcp_source: like the descriptor tool of the same name (its http
//     call), else the service's MCP endpoint.
//
// Absent description and input_schema come from the service's tools/list
// snapshot (its discovered or baked descriptor).
func (b *builder) withToolManifests(svc *pod.Service, sd *ServiceDescriptor) (*ServiceDescriptor, error) {
	if svc.Claw == nil || len(svc.Claw.ToolManifests) == 0 {
		return sd, nil
	}
	stdio := svc.Claw.MCPStdio
	var snapshot *capability.Descriptor
	merged := &capability.Descriptor{Version: 2}
	if sd != nil {
		snapshot = sd.Descriptor
		c := *sd.Descriptor
		c.Version = 2
		c.Tools = append([]capability.Tool(nil), sd.Descriptor.Tools...)
		merged = &c
	}
	if merged.MCP == nil && stdio != nil {
		p := capability.DefaultMCPPath
		if v := svc.Compose.Environment[envMCPStdioPath]; v != nil && *v != "" {
			p = *v
		}
		merged.MCP = &capability.MCP{Transport: capability.TransportStreamableHTTP, Path: p}
	}
	origin := map[string]string{} // tool name -> manifest file, for duplicates
	for i, rel := range svc.Claw.ToolManifests {
		key := fmt.Sprintf("x-claw.tool-manifests[%d]", i)
		full := rel
		if !filepath.IsAbs(full) {
			full = filepath.Join(b.pod.Dir, filepath.FromSlash(rel))
		}
		data, err := readBounded(full, capability.MaxDescriptorBytes)
		if err != nil {
			problem := fmt.Sprintf("cannot read %s: %v", rel, trimPathErr(err))
			if errors.Is(err, os.ErrNotExist) {
				problem = fmt.Sprintf("%s does not exist", rel)
			}
			return nil, &pod.Error{File: b.pod.File, Service: svc.Name, Key: key, Problem: problem, Fix: "list CKP Tool manifest files relative to the pod file"}
		}
		b.input(full, data)
		ms, err := capability.ParseToolManifests(data)
		if err != nil {
			return nil, manifestErr(rel, svc.Name, err, "correct the manifest (docs/services.md: \"CKP Tool manifests\")")
		}
		for _, m := range ms {
			if prev, dup := origin[m.Tool.Name]; dup {
				return nil, &pod.Error{File: rel, Service: svc.Name, Key: docField(len(ms), m.Document, "metadata.name"), Problem: fmt.Sprintf("tool %q is also defined in %s", m.Tool.Name, prev), Fix: "define each tool once per service"}
			}
			origin[m.Tool.Name] = rel
			t, err := b.manifestTool(svc, rel, len(ms), &m, snapshot, sd)
			if err != nil {
				return nil, err
			}
			if j := indexOfTool(merged.Tools, t.Name); j >= 0 {
				merged.Tools[j] = t
			} else {
				merged.Tools = append(merged.Tools, t)
			}
		}
	}
	out := &ServiceDescriptor{Service: svc.Name, Descriptor: merged, Kind: SourceToolManifest, Location: svc.Claw.ToolManifests[0]}
	out.readSkill = func(context.Context) ([]byte, error) { return nil, os.ErrNotExist }
	if sd != nil {
		out.Kind, out.Location, out.readSkill, out.discovery = sd.Kind, sd.Location, sd.readSkill, sd.discovery
	}
	return out, nil
}

// manifestTool validates one manifest against the service and completes it
// from the snapshot.
func (b *builder) manifestTool(svc *pod.Service, rel string, docs int, m *capability.ToolManifest, snapshot *capability.Descriptor, sd *ServiceDescriptor) (capability.Tool, error) {
	stdio := svc.Claw.MCPStdio
	field := func(f string) string { return docField(docs, m.Document, f) }
	perr := func(f, problem, fix string) error {
		return &pod.Error{File: rel, Service: svc.Name, Key: field(f), Problem: problem, Fix: fix}
	}
	var listed *capability.Tool
	if snapshot != nil {
		listed = snapshot.Tool(m.RemoteName())
	}
	for _, ref := range []struct{ name, v string }{{"spec.sandbox_ref", m.SandboxRef}, {"spec.policy_ref", m.PolicyRef}} {
		if ref.v != "" {
			b.warns = append(b.warns, fmt.Sprintf("%s: service %q: %s: %q is recorded but not enforced by this runtime (tool %q)", rel, svc.Name, field(ref.name), ref.v, m.Tool.Name))
		}
	}
	switch {
	case m.Source != nil && m.Source.Scheme == capability.SourceStdio:
		if stdio == nil {
			return capability.Tool{}, perr("spec.mcp_source.uri", fmt.Sprintf("%q is a stdio server, but service %q does not wrap one", m.Source.URI, svc.Name),
				fmt.Sprintf("run the server through claw-mcp-stdio: add x-claw.mcp-stdio {command: %s} to %q (image clawgo/claw-mcp-stdio or one based on it)", m.Source.Command, svc.Name))
		}
		if !sameCommand(stdio.Command, m.Source.Command) {
			b.warns = append(b.warns, fmt.Sprintf("%s: service %q: %s: %q names %s, but the service wraps %q; the tool is called on the service's wrapper", rel, svc.Name, field("spec.mcp_source.uri"), m.Source.URI, m.Source.Command, stdio.Command))
		}
	case m.Source != nil && m.Source.Scheme == capability.SourceHTTPS:
		// cllama calls the endpoint directly with the service's credential
		// (service-auth or descriptor auth.env). A stdio wrapper's
		// credential is for the wrapper alone, so the two do not mix.
		if stdio != nil {
			return capability.Tool{}, perr("spec.mcp_source.uri", fmt.Sprintf("%q is a separate MCP server, but service %q wraps a stdio server", m.Source.URI, svc.Name),
				"attach manifests with https:// sources to a service without x-claw.mcp-stdio (the credential cllama presents is that service's)")
		}
	default:
		if d := descriptorTool(sd, m.Tool.Name); d != nil && d.HTTP != nil {
			m.Tool.HTTP = d.HTTP
		} else if stdio == nil && (sd == nil || sd.Descriptor.MCP == nil) {
			return capability.Tool{}, perr("spec", fmt.Sprintf("tool %q has no mcp_source and service %q has no way to run it (no descriptor tool of that name with an http call, no MCP endpoint)", m.Tool.Name, svc.Name),
				"add spec.mcp_source (stdio:///… or https://…), or attach the manifest to the service whose descriptor declares the tool")
		}
	}
	t, err := m.Complete(listed)
	if err != nil {
		fix := "write spec.description and spec.input_schema in the manifest"
		switch {
		case stdio != nil && (sd == nil || sd.Kind != SourceDiscovered):
			fix = fmt.Sprintf("run `claw discover %s` to snapshot the server's tools, or %s", svc.Name, fix)
		case stdio != nil:
			fix = fmt.Sprintf("check mcp_source.tool_name against the snapshot %s (rerun `claw discover %s` if the server changed), or %s", sd.Location, svc.Name, fix)
		default:
			fix = fmt.Sprintf("give %q a tools/list snapshot (%s baked in its image, or x-claw.describe-file), or %s", svc.Name, ToolsSnapshotName, fix)
		}
		e := manifestErr(rel, svc.Name, err, fix).(*pod.Error)
		if e.Key != "" {
			e.Key = field(e.Key)
		}
		return t, e
	}
	return t, nil
}

// manifestErr reports a capability error in a manifest file.
func manifestErr(rel, service string, err error, fix string) error {
	e := &pod.Error{File: rel, Service: service, Problem: "invalid CKP Tool manifest: " + err.Error(), Fix: fix}
	var fe *capability.FieldError
	if errors.As(err, &fe) {
		e.Key, e.Problem = fe.Field, fe.Problem
	}
	return e
}

func docField(docs, i int, f string) string {
	if docs > 1 {
		return fmt.Sprintf("documents[%d].%s", i, f)
	}
	return f
}

func descriptorTool(sd *ServiceDescriptor, name string) *capability.Tool {
	if sd == nil {
		return nil
	}
	return sd.Descriptor.Tool(name)
}

func indexOfTool(tools []capability.Tool, name string) int {
	for i := range tools {
		if tools[i].Name == name {
			return i
		}
	}
	return -1
}

// sameCommand reports whether the wrapped command and a stdio:/// path name
// the same program (equal, or equal base names when either is relative).
func sameCommand(command, sourcePath string) bool {
	if command == sourcePath {
		return true
	}
	if !strings.HasPrefix(command, "/") {
		return path.Base(command) == path.Base(sourcePath)
	}
	return false
}
