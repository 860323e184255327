package kube

import (
	"bytes"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/clawdapus/clawgo/internal/compile"
)

// An agent with native tools mounts its own MCP client configuration, the
// compiled file byte for byte from a Secret of its own, read-only at
// /claw/mcp.json, and has CLAW_MCP_URL and CLAW_MCP_TOKEN (from its token
// Secret); an agent without native tools has none of them.
func TestNativeToolsOnKubernetes(t *testing.T) {
	d := decodeCase(t, "native-tools")
	secrets := map[string]*corev1.Secret{}
	deployments := map[string]*appsv1.Deployment{}
	for _, obj := range d.objects {
		switch o := obj.(type) {
		case *corev1.Secret:
			secrets[o.Name] = o
		case *appsv1.Deployment:
			deployments[o.Name] = o
		}
	}
	files := map[string][]byte{}
	for _, f := range d.c.res.Output.Files {
		files[f.Path] = f.Data
	}
	for _, a := range d.c.res.Agents {
		ps := deployments[a.ID].Spec.Template.Spec
		c := ps.Containers[0]
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		var mounts []corev1.VolumeMount
		for _, m := range c.VolumeMounts {
			if m.MountPath == compile.AgentMCPConfig {
				mounts = append(mounts, m)
			}
		}
		if !a.HasNative() {
			_, url := env[compile.EnvMCPURL]
			_, tok := env[compile.EnvMCPToken]
			if len(mounts) > 0 || url || tok || secrets[a.ID+"-mcp"] != nil {
				t.Errorf("%s has no native tools but got MCP wiring", a.ID)
			}
			continue
		}
		if len(mounts) != 1 || !mounts[0].ReadOnly || mounts[0].SubPath != compile.MCPConfigName {
			t.Fatalf("%s: mounts %+v", a.ID, mounts)
		}
		var src *corev1.SecretVolumeSource
		for _, v := range ps.Volumes {
			if v.Name == mounts[0].Name {
				src = v.Secret
			}
		}
		if src == nil || src.SecretName != a.ID+"-mcp" {
			t.Fatalf("%s: /claw/mcp.json is not from its own Secret: %+v", a.ID, src)
		}
		want := files[compile.MCPConfigPath(a.ID)]
		if got := secrets[a.ID+"-mcp"].Data[compile.MCPConfigName]; len(want) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s: Secret holds %q, compiled %q", a.ID, got, want)
		}
		if !strings.Contains(string(want), "Bearer "+a.Token) {
			t.Errorf("%s: the file does not carry the agent's token", a.ID)
		}
		if env[compile.EnvMCPURL].Value != "http://cllama:8080/mcp" {
			t.Errorf("%s: %s = %+v", a.ID, compile.EnvMCPURL, env[compile.EnvMCPURL])
		}
		if ref := env[compile.EnvMCPToken].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != a.ID+"-token" {
			t.Errorf("%s: %s is not read from the token Secret: %+v", a.ID, compile.EnvMCPToken, env[compile.EnvMCPToken])
		}
	}
}
