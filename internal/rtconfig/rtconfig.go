// Package rtconfig is cllama's settings of the Go runtime, made as the
// package is initialised: cmd/cllama imports it for that alone. Go
// initialises a package as soon as what it imports is, before any other
// ready package whose import path sorts after its own, so this one runs
// before most of what cllama imports, among them the JSON Schema
// compiler, which allocates 1.7 MiB as it is initialised (the protobuf
// descriptors and CEL's tables, about 0.8 MiB, come first).
//
// Made in main, the same settings came too late: package initialisation
// allocates about 3 MiB, which at Go's default target ran a collection
// before main began in about every other start (0.5–3 ms of CPU on two
// cores). At 200 none runs.
package rtconfig

import (
	"os"
	"runtime"
	"runtime/debug"
)

// DefaultGOGC is the collector's target when GOGC is not set. cllama's
// live heap is about 2 MiB, so at Go's default (100: collect once the heap
// doubles, but not below 4 MiB) a collection ran every couple of hundred
// streamed requests, its fixed cost about 7% of cllama's CPU. At 200 it
// runs half as often for about 4 MiB more heap under load (given back
// once idle); memory at rest does not change. GOGC, and GOMEMLIMIT, still
// decide where set.
const DefaultGOGC = 200

func init() {
	// cllama serves no profiles: sampling allocations would only cost CPU
	// and keep a table of call stacks (1.4 MiB after a few hundred
	// requests).
	runtime.MemProfileRate = 0
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGOGC)
	}
}
