package discover

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// binDir holds claw-mcp-stdio and claw-mcp-echo, built once for the
// package's tests (statically, so the container test can use them too).
var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "discover-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	for _, pkg := range []string{"claw-mcp-stdio", "claw-mcp-echo"} {
		cmd := exec.Command(goBin, "build", "-trimpath", "-o", filepath.Join(dir, pkg), "../../cmd/"+pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, out)
			return 1
		}
	}
	binDir = dir
	return m.Run()
}

func wrapperBin() string { return filepath.Join(binDir, "claw-mcp-stdio") }
func echoBin() string    { return filepath.Join(binDir, "claw-mcp-echo") }
