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
		_, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, tc.src))
		var e *Error
		if !errors.As(err, &e) || e.Key != "x-claw.tool-policy.max-parallel" || !strings.Contains(e.Problem, tc.want) {
			t.Errorf("%s: got %v, want key x-claw.tool-policy.max-parallel and %q", tc.src, err, tc.want)
		}
	}
}

// tool-annotations marks a service's tools (say, a discovered MCP tool)
// parallel-safe; it belongs on the providing service and takes booleans.
func TestToolAnnotations(t *testing.T) {
	s := mustService(t, "tool-annotations: {lookup: {parallel_safe: true}, slow: {parallel_safe: false}}")
	if a := s.ToolAnnotations["lookup"]; a.ParallelSafe == nil || !*a.ParallelSafe {
		t.Fatalf("lookup = %+v", a)
	}
	if a := s.ToolAnnotations["slow"]; a.ParallelSafe == nil || *a.ParallelSafe {
		t.Fatalf("slow = %+v", a)
	}
	for _, tc := range []struct{ src, key, want string }{
		{"cllama: p\ntool-annotations: {x: {parallel_safe: true}}", "x-claw.tool-annotations", "agent"},
		{"tool-annotations: {x: {parallel_safe: maybe}}", "x-claw.tool-annotations.x.parallel_safe", ""},
		{"tool-annotations: {x: {paralel_safe: true}}", "x-claw.tool-annotations.x", "parallel_safe"},
		{"tool-annotations: [x]", "x-claw.tool-annotations", ""},
	} {
		_, err := DecodeServiceClaw("claw-pod.yml", "svc", decodeYAML(t, tc.src))
		var e *Error
		if !errors.As(err, &e) || !strings.HasPrefix(e.Key, tc.key) || !strings.Contains(e.Problem+e.Fix, tc.want) {
			t.Errorf("%s: got %v, want key %s mentioning %q", tc.src, err, tc.key, tc.want)
		}
	}
}
