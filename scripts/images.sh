#!/usr/bin/env bash
# Builds every image the example pod needs FROM scratch, from static Go
# binaries built on this machine: no base image is pulled, so this works on a
# machine with no registry access. Usage: scripts/images.sh [image ...]
# (default: all). TAG (default latest) and PREFIX (default clawgo) name them.
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${TAG:-latest}
PREFIX=${PREFIX:-clawgo}
command -v docker >/dev/null || { echo "images: docker is not installed; install Docker Engine to build images" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "images: the Docker daemon is not reachable (is it running, and may this user use it?)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

gobuild() { # out pkg
  CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags='-s -w' -o "$1" "$2"
}

# image NAME ENTRYPOINT PKG [PKG...]: binaries are copied to /<basename of pkg>.
image() {
  local name=$1 entry=$2; shift 2
  local ctx="$work/$name"
  mkdir -p "$ctx"
  local copies=""
  for pkg in "$@"; do
    local bin; bin=$(basename "$pkg")
    gobuild "$ctx/$bin" "$pkg"
    copies+="COPY $bin /$bin"$'\n'
  done
  printf 'FROM scratch\n%s%s\nENTRYPOINT ["/%s"]\n' "$copies" "${EXTRA:-}" "$entry" > "$ctx/Dockerfile"
  [ -n "${EXTRA_DIR:-}" ] && cp -R "$EXTRA_DIR"/. "$ctx/"
  echo "images: building $PREFIX/$name:$TAG"
  # The legacy builder warns about itself on stderr; show stderr only on failure.
  if ! docker build -q -t "$PREFIX/$name:$TAG" "$ctx" >/dev/null 2>"$work/$name.err"; then
    cat "$work/$name.err" >&2
    exit 1
  fi
}

want() { [ -z "$SELECTED" ] || [[ " ${SELECTED} " == *" $1 "* ]]; }
SELECTED="$*"

want cllama && image cllama cllama ./cmd/cllama
want claw-mcp-stdio && image claw-mcp-stdio claw-mcp-stdio ./cmd/claw-mcp-stdio ./cmd/claw-mcp-echo
want claw-model && image claw-model claw-model ./cmd/claw-model
if want example-trading-api; then
  EXTRA=$'COPY .claw-describe.json /.claw-describe.json\nCOPY skills /skills\nLABEL claw.describe=/.claw-describe.json\nEXPOSE 4000' \
  EXTRA_DIR=examples/trading-desk/trading-api \
    image example-trading-api trading-api ./examples/trading-desk/trading-api
fi
want example-openai-runner && image example-openai-runner openai-runner ./examples/trading-desk/runners/openai-runner
want example-anthropic-runner && image example-anthropic-runner anthropic-runner ./examples/trading-desk/runners/anthropic-runner
want example-mcp-runner && image example-mcp-runner mcp-runner ./examples/trading-desk/runners/mcp-runner
docker image ls --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' | grep "^$PREFIX/.*:$TAG\b" | sort
