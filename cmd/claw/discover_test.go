package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
	"github.com/clawdapus/clawgo/internal/toolcall"
	"github.com/clawdapus/clawgo/internal/toolexec"
)

// buildTools builds claw-mcp-stdio and claw-mcp-echo into a temporary
// directory.
func buildTools(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	for _, pkg := range []string{"claw-mcp-stdio", "claw-mcp-echo"} {
		if out, err := exec.Command(goBin, "build", "-o", filepath.Join(dir, pkg), "../"+pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	return dir
}

// TestDiscoverThenCompile: `claw discover --local` snapshots the real
// server through the real wrapper, and `claw compile` then grants its tools
// (and a CKP manifest's) from the snapshot, with no live MCP.
func TestDiscoverThenCompile(t *testing.T) {
	bin := buildTools(t)
	dir := t.TempDir()
	podYML := `x-claw: {pod: disc}
services:
  analyst:
    image: runner
    x-claw:
      cllama: passthrough
      tools:
        - service: echo
          allow: [add, shout, nap]
  echo:
    image: clawgo/claw-mcp-stdio:dev
    x-claw:
      mcp-stdio: {command: "${ECHO_BIN}"}
      tool-manifests: [shout.yaml]
`
	shout := `claw: "0.3.0"
kind: Tool
metadata: {name: shout}
spec:
  mcp_source: {uri: "stdio:///claw-mcp-echo", tool_name: echo}
  timeout_ms: 1000
---
claw: "0.3.0"
kind: Tool
metadata: {name: nap}
spec:
  mcp_source: {uri: "stdio:///claw-mcp-echo", tool_name: slow}
  timeout_ms: 200
`
	for name, body := range map[string]string{"claw-pod.yml": podYML, "shout.yaml": shout} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "claw-pod.yml")
	h := newHarness()
	h.f.Env = []string{"ECHO_BIN=" + filepath.Join(bin, "claw-mcp-echo")}

	// Before discovery the manifest cannot be completed.
	if code := h.run("compile", "-q", "-f", file); code != ExitFailure || !strings.Contains(h.err.String(), "run `claw discover echo`") {
		t.Fatalf("compile before discover: exit %d, stderr:\n%s", code, h.err.String())
	}
	h.err.Reset()
	if code := h.run("discover", "--local", "--wrapper", filepath.Join(bin, "claw-mcp-stdio"), "-f", file); code != ExitOK {
		t.Fatalf("discover: exit %d, stderr:\n%s", code, h.err.String())
	}
	if !strings.Contains(h.out.String(), "echo: 4 tool(s) [add, echo, lookup_symbol, slow] -> .claw-discovered/echo.claw-describe.json") {
		t.Errorf("discover printed:\n%s", h.out.String())
	}
	h.out.Reset()
	if code := h.run("compile", "-q", "-f", file); code != ExitOK {
		t.Fatalf("compile: exit %d, stderr:\n%s", code, h.err.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, ".claw-runtime", "context", "analyst", "tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.ParseTools(data)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]manifest.Execution{}
	for _, tl := range m.Tools {
		got[tl.Name] = tl.Execution
	}
	if e := got["echo.add"]; e.Transport != manifest.TransportMCP || e.ToolName != "add" || e.BaseURL != "http://echo:8080" || e.Path != "/mcp" {
		t.Errorf("echo.add execution = %+v", e)
	}
	if e := got["echo.shout"]; e.ToolName != "echo" || e.TimeoutMS != 1000 {
		t.Errorf("echo.shout execution = %+v", e)
	}

	// cllama's executor runs the compiled tools through the real wrapper
	// (started here on loopback in place of the pod's echo service).
	base := startWrapper(t, filepath.Join(bin, "claw-mcp-stdio"), filepath.Join(bin, "claw-mcp-echo"))
	ex := toolexec.New(toolexec.Options{})
	defer ex.Close()
	// Spec 001: arguments are validated against input_schema (-32602) and
	// timeout_ms ends a call (-32014).
	for _, c := range []struct {
		tool, args, want string
		rpc              int
	}{
		{"echo.shout", `{"text":"hello"}`, "hello", 0},
		{"echo.add", `{"a":2,"b":3}`, "5", 0},
		{"echo.shout", `{"text":7}`, "", toolexec.RPCInvalidParams},
		{"echo.nap", `{"ms":5000}`, "", toolexec.RPCTimeout},
	} {
		var tool *manifest.Tool
		for i := range m.Tools {
			if m.Tools[i].Name == c.tool {
				tool = &m.Tools[i]
			}
		}
		tool.Execution.BaseURL = base
		// The bound is the governed call's (toolcall: the tool's own
		// timeout_ms over the policy's), as cllama gives it.
		env := ex.Run(context.Background(), toolexec.Call{AgentID: "analyst", Tool: tool, Arguments: json.RawMessage(c.args),
			Timeout: toolcall.Timeout(tool, manifest.DefaultPolicy())})
		if c.rpc != 0 {
			if env.OK || env.Error == nil || env.Error.RPCCode != c.rpc {
				t.Errorf("%s(%s) = %+v, want JSON-RPC error %d", c.tool, c.args, env, c.rpc)
			}
			continue
		}
		if !env.OK || !strings.Contains(string(env.Data), c.want) {
			t.Errorf("%s(%s) = %+v", c.tool, c.args, env)
		}
	}

	// Changing the command since discovery warns.
	h.err.Reset()
	h.f.Env = []string{"ECHO_BIN=/elsewhere/claw-mcp-echo"}
	if code := h.run("compile", "-q", "-f", file); code != ExitOK || !strings.Contains(h.err.String(), "command changed since") {
		t.Errorf("compile after a command change: exit %d, stderr:\n%s", code, h.err.String())
	}
}

// startWrapper runs claw-mcp-stdio around server on a free loopback port
// until the test ends and returns its base URL once healthy.
func startWrapper(t *testing.T, wrapper, server string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, wrapper, "-addr", addr, "--", server)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	base := "http://" + addr
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the wrapper did not become healthy")
	return ""
}

func TestDiscoverUsage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "claw-pod.yml")
	if err := os.WriteFile(file, []byte("services:\n  a:\n    image: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"discover", "--pull", "sometimes", "-f", file}, ExitUsage, "--pull"},
		{[]string{"discover", "-f", file}, ExitFailure, "no service declares x-claw.mcp-stdio"},
		{[]string{"discover", "a", "-f", file}, ExitFailure, "does not wrap a stdio MCP server"},
	} {
		h := newHarness()
		if code := h.run(c.args...); code != c.code || !strings.Contains(h.err.String(), c.want) {
			t.Errorf("%v: exit %d, stderr:\n%s", c.args, code, h.err.String())
		}
	}
}
