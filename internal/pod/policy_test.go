package pod

import (
	"errors"
	"strings"
	"testing"
)

// tool-policy's max-parallel bounds the parallel-safe calls run at once;
// like the other limits it is a positive integer, pod-wide or per service.
func TestPolicyMaxParallel(t *testing.T) {
	c := mustPod(t, "tool-policy: {max-parallel: 8}")
	if c.ToolPolicy.MaxParallel == nil || *c.ToolPolicy.MaxParallel != 8 {
		t.Fatalf("pod max-parallel = %v", c.ToolPolicy.MaxParallel)
	}
	s := mustService(t, "cllama: passthrough\ntool-policy: {max-parallel: '2'}")
	if s.ToolPolicy.MaxParallel == nil || *s.ToolPolicy.MaxParallel != 2 {
		t.Fatalf("service max-parallel = %v", s.ToolPolicy.MaxParallel)
	}
	for _, tc := range []struct{ src, want string }{
		{"cllama: p\ntool-policy: {max-parallel: 0}", "> 0"},
		{"cllama: p\ntool-policy: {max-parallel: -1}", "> 0"},
		{"cllama: p\ntool-policy: {max-parallel: lots}", "integer"},
	} {
		_, _, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, tc.src))
		var e *Error
		if !errors.As(err, &e) || e.Key != "x-claw.tool-policy.max-parallel" || !strings.Contains(e.Problem, tc.want) {
			t.Errorf("%s: got %v, want key x-claw.tool-policy.max-parallel and %q", tc.src, err, tc.want)
		}
	}
}
