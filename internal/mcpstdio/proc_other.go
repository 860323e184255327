//go:build !unix

package mcpstdio

import (
	"os"
	"os/exec"
	"syscall"
)

func setProcessGroup(*exec.Cmd) {}

func signalGroup(p *os.Process, sig syscall.Signal) error { return p.Signal(sig) }

func killGroup(p *os.Process) error { return p.Kill() }
