#!/usr/bin/env bash
# Installs Docker Compose v2 from the Go module proxy (no registry or
# download site needed) and prints the binary's path. The end-to-end tests
# run the example pod under every Compose listed in CLAW_E2E_COMPOSE; CI
# lists docker-compose 1.29 and this one. Usage: scripts/compose-v2.sh
# COMPOSE_V2_VERSION picks the release (v2.35.0: later releases carry go.mod
# exclude directives, which `go install pkg@version` refuses).
set -euo pipefail
version=${COMPOSE_V2_VERSION:-v2.35.0}
dir=${COMPOSE_V2_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/clawgo/compose-$version}
bin="$dir/docker-compose-v2"
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  echo "compose-v2: building Docker Compose $version from the Go module proxy (a few minutes, once)" >&2
  GOBIN="$dir" CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$version" \
    "github.com/docker/compose/v2/cmd@$version" >&2
  mv "$dir/cmd" "$bin"
fi
"$bin" version >&2
echo "$bin"
