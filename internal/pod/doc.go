// Package pod owns claw-pod.yml: loading it with compose-go (so .env,
// ${VAR:-default} interpolation, extends and profiles behave as in Docker
// Compose) and decoding the typed x-claw grammar at pod and service level,
// including the defaults / `...` spread rules and grant normalisation
// (spec 000 §2, 002 "Pod-Level Defaults", 003 "x-claw.feeds").
//
// It does not read descriptors, resolve grants against them or write
// anything; internal/compile does.
package pod
