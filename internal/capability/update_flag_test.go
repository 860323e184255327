package capability

import "flag"

// The repository refreshes golden files with `go test ./... -update`; this
// package has none, but must accept the flag so that command runs.
var _ = flag.Bool("update", false, "rewrite golden files (none in this package)")
