package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	full := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/clawdapus/clawgo", Version: "v0.3.1"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "4f2a9c1d0e3b5a6978877665544332211aabbccd"},
			{Key: "vcs.time", Value: "2026-11-20T10:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{full, "claw v0.3.1 (revision 4f2a9c1d0e3b, 2026-11-20T10:04:05Z, modified; go1.26.8 linux/amd64)"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "claw (devel) (go1.26.8 linux/amd64)"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, "claw (unknown) (revision abc; go1.26.8 linux/amd64)"},
	} {
		if got := format("claw", tc.bi, "linux/amd64"); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
	if got := format("claw", nil, "linux/amd64"); !strings.HasPrefix(got, "claw (unknown) (go") {
		t.Errorf("without build info: %q", got)
	}
}

// The test binary has build information: String names the program and
// the Go toolchain.
func TestStringOfThisBinary(t *testing.T) {
	got := String("x")
	if !strings.HasPrefix(got, "x ") || !strings.Contains(got, "go1") {
		t.Errorf("String = %q", got)
	}
}
