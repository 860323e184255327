#!/usr/bin/env bash
# `make demo`: build the images, bring the example trading-desk pod up, let the
# five governed agents run their conversations (deciding, as the operator, the
# executor's two orders held for approval: one approved, one denied), then
# show what happened — the transcripts, the audit table, and what the
# trading-api received — and take the pod down again (also on failure or
# Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
pod_dir="$root/examples/trading-desk"
claw="$root/bin/claw"
WAIT=${DEMO_WAIT_SECONDS:-120}
project=trading-desk # the pod's name, which claw uses as the compose project
container() { docker ps -a -q --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service=$1" | head -n1; }

command -v docker >/dev/null || { echo "demo: docker is not installed; the demo runs the pod on Docker Engine with Compose" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "demo: the Docker daemon is not reachable (is it running?)" >&2; exit 1; }

t0=$(date +%s)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "== building binaries and images (FROM scratch, nothing is pulled)"
make -s build
scripts/images.sh

cd "$pod_dir"
# The agents hold the same scripted conversations on every run. cllama does
# not restore hidden tool rounds across two conversations that look the same
# (docs/tools-and-feeds.md "Continuity"), so a previous run's continuity state would turn this
# run's off: start it fresh (history itself is kept; the audit shows this run).
rm -rf .claw-runtime/history/.continuity
cleanup() { echo "== claw down"; "$claw" down >/dev/null 2>&1 || true; }
trap cleanup EXIT

echo "== claw compile"
summary=$("$claw" compile)
echo "$summary"
echo "== claw up -d"
"$claw" up -d
echo "== the operator's console while the pod runs (docs/console.md; log in with .claw-auth/operator-token)"
"$claw" console || echo "   (no console URL: cllama's admin listener is not published)"

echo "== waiting for the agents' conversations (up to ${WAIT}s)"
deadline=$(( $(date +%s) + WAIT ))

# The executor's orders of 50 shares or more wait for a person (the pod's
# approve: rule). As the operator, approve the 100 NVDA and deny the 80 MSFT
# with a reason the model is told; the runner's request stays open meanwhile.
echo "== deciding the executor's held orders (claw approvals, claw approve, claw deny)"
deny_reason="over the desk's 25000 USD per-order limit"
decided_nvda="" decided_msft="" seen=" "
while [ -z "$decided_nvda" ] || [ -z "$decided_msft" ]; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "demo: the executor's held orders were not both decided within ${WAIT}s (NVDA: ${decided_nvda:-not seen}, MSFT: ${decided_msft:-not seen}); claw approvals and the executor's log follow" >&2
    "$claw" approvals >&2 || true
    "$claw" logs executor >&2 || true
    exit 1
  fi
  # One "ID SYMBOL" line per pending execute_trade of the executor's.
  pending=$("$claw" approvals --json 2>/dev/null </dev/null | awk '
    /^ *"id":/ {id=$2; agent=""; tool=""; sym=""}
    /^ *"agent":/ {agent=$2}
    /^ *"tool":/ {tool=$2}
    /^ *"symbol":/ {sym=$2}
    /^ *"state":/ {gsub(/[",]/, "", id); gsub(/[",]/, "", sym)
      if (agent == "\"executor\"," && tool == "\"trading-api.execute_trade\",") print id, sym}' || true)
  while read -r id sym; do
    [ -n "$id" ] || continue
    case "$seen" in *" $id "*) continue ;; esac
    seen="$seen$id "
    echo "   held: $sym order $id ($(( $(date +%s) - t0 ))s after make demo started)"
    "$claw" approvals </dev/null | sed 's/^/   /'
    case "$sym" in
      NVDA) if "$claw" approve "$id" --by demo-operator --note "within the desk's limit" </dev/null | sed 's/^/   claw approve: /'; then
              decided_nvda=approved
            else seen=${seen/ $id / }; fi ;; # listed again while still pending: tried again
      MSFT) if "$claw" deny "$id" --by demo-operator --reason "$deny_reason" </dev/null | sed 's/^/   claw deny: /'; then
              decided_msft=denied
            else seen=${seen/ $id / }; fi ;;
      *) echo "   (not the demo's: left for a person, or to expire)" ;;
    esac
  done <<< "$pending"
  sleep 1
done
for svc in analyst researcher executor scout; do
  while :; do
    id=$(container "$svc")
    if [ -n "$id" ] && [ "$(docker inspect -f '{{.State.Status}}' "$id" 2>/dev/null)" = exited ]; then
      break
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "demo: $svc did not finish within ${WAIT}s; its log follows" >&2
      "$claw" logs "$svc" >&2 || true
      exit 1
    fi
    sleep 1
  done
  [ "$svc" = analyst ] && echo "   first agent finished $(( $(date +%s) - t0 ))s after make demo started"
done

status=0
for svc in analyst researcher executor scout; do
  echo; echo "== transcript: $svc"
  docker logs "$(container "$svc")" 2>&1 | grep -v '^RUNNER_SUMMARY' || true
  code=$(docker inspect -f '{{.State.ExitCode}}' "$(container "$svc")")
  [ "$code" = 0 ] || { echo "demo: $svc exited with $code" >&2; status=1; }
done

echo; echo "== what each agent can reach (the perimeter, from claw compile)"
echo "$summary" | awk '/^[^ ].* \(service / {agent=$1} /^  reaches: / {sub(/^  reaches: /, ""); print "   " agent ": " $0}'

echo; echo "== claw audit (this run)"
"$claw" audit --since "$started" || status=1

echo; echo "== the intern, whose budget allows one request a day (its second turn is refused: 402)"
id=$(container intern)
if [ -n "$id" ]; then
  for _ in $(seq 1 30); do
    [ "$(docker inspect -f '{{.State.Status}}' "$id" 2>/dev/null)" = exited ] && break
    sleep 1
  done
  docker logs "$id" 2>&1 | grep -v '^RUNNER_SUMMARY' | tail -4 || true
fi

echo; echo "== claw spend (each agent's spend, from session history)"
"$claw" spend || status=1

echo; echo "== a few of cllama's metrics (docs/cllama.md \"Metrics\")"
cllama_ip=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$(container cllama)" 2>/dev/null | tr ' ' '\n' | grep . || true)
shown=""
for ip in $cllama_ip; do
  if out=$(curl -fsS -m 3 "http://$ip:9090/metrics" 2>/dev/null); then
    echo "$out" | grep -E '^cllama_(requests_total|tool_calls_total)\{' | head -16
    echo "$out" | grep -E '^cllama_approvals_(total\{|pending)' || true
    shown=1; break
  fi
done
[ -n "$shown" ] || echo "   (metrics not reachable from this host; curl http://<cllama>:9090/metrics from inside the pod's network)"

echo; echo "== what trading-api received"
docker logs "$(container trading-api)" 2>&1 | grep -o 'received .*' || true
exit $status
