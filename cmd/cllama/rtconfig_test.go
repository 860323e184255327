package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNoCollectionWhilePackagesInitialise: the binary's runtime settings
// (internal/rtconfig) apply before most packages are initialised, so the
// 3 MiB their initialisation allocates runs no collection (at Go's own
// default target, about every other start ran one). -version exits as
// soon as main runs.
func TestNoCollectionWhilePackagesInitialise(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildCllama(ctx, t, t.TempDir())
	for range 5 {
		cmd := exec.CommandContext(ctx, bin, "-version")
		cmd.Env = append(os.Environ(), "GOGC=", "GOMEMLIMIT=", "GODEBUG=gctrace=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "gc ") {
				t.Fatalf("a collection before main:\n%s", out)
			}
		}
	}
}
