// Package version describes the running binary for --version: the module
// version, the revision and commit time of the source it was built from
// when the build recorded them, and the Go toolchain. Every command of the
// module prints it the same way.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// String is the one-line version of program, e.g.
//
//	claw v0.3.1 (revision 4f2a9c1d0e3b, 2026-11-20T10:04:05Z; go1.26.8 linux/amd64)
//	cllama (devel) (revision 4f2a9c1d0e3b, 2026-11-20T10:04:05Z, modified; go1.26.8 linux/amd64)
func String(program string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return format(program, bi, runtime.GOOS+"/"+runtime.GOARCH)
}

// revisionLen is how much of a commit hash is shown.
const revisionLen = 12

func format(program string, bi *debug.BuildInfo, platform string) string {
	ver, goVersion := "(unknown)", runtime.Version()
	var details []string
	if bi != nil {
		if bi.Main.Version != "" {
			ver = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			details = append(details, "revision "+rev[:min(len(rev), revisionLen)])
		}
		if t := settings["vcs.time"]; t != "" {
			details = append(details, t)
		}
		if settings["vcs.modified"] == "true" {
			details = append(details, "modified")
		}
	}
	build := goVersion + " " + platform
	if len(details) > 0 {
		build = strings.Join(details, ", ") + "; " + build
	}
	return fmt.Sprintf("%s %s (%s)", program, ver, build)
}
