//go:build !unix

package main

import "os/exec"

// composeGroup is a no-op where process groups and terminals work
// differently; see procgroup_unix.go.
type composeGroup struct{}

func newComposeGroup(*exec.Cmd) *composeGroup { return &composeGroup{} }

func (*composeGroup) restore() {}
