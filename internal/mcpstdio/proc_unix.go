//go:build unix

package mcpstdio

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group so that signals
// reach the whole tree: stdio servers are often launchers (npx, uvx, sh)
// whose real server is a grandchild.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(p *os.Process, sig syscall.Signal) error {
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		return p.Signal(sig)
	}
	return nil
}

func killGroup(p *os.Process) error { return signalGroup(p, syscall.SIGKILL) }
