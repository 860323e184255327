// Package pod owns claw-pod.yml: loading it with compose-go (so .env,
// interpolation, extends and profiles behave as in Docker Compose) and
// decoding the typed x-claw grammar at pod and service level.
package pod

import _ "github.com/compose-spec/compose-go/v2/loader"
