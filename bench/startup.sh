#!/usr/bin/env bash
# Measures, for `reverie agent` on an existing data dir:
#   - cold start to the first 200 from /healthz (median and min over RUNS starts)
#   - idle RSS after IDLE seconds (web listener, event bus and extensions running)
#   - the stripped binary size
# Usage: bench/startup.sh [RUNS] [IDLE]
set -euo pipefail
RUNS=${1:-15}
IDLE=${2:-10}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/reverie" ./cmd/reverie
port=$(( 20000 + RANDOM % 20000 ))
export REVERIE_WEB__LISTEN=127.0.0.1:$port
data="$work/data"
"$work/reverie" init --data "$data" >/dev/null
pid=
wait_healthy() {
  while :; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)
    [ "$code" = 200 ] && return 0
  done
}
# One warm-up start creates reverie.db, so every measured start is on an existing data dir.
"$work/reverie" agent --data "$data" 2>/dev/null & pid=$!
wait_healthy; kill -TERM $pid; wait $pid || true
times=()
for _ in $(seq "$RUNS"); do
  t0=$(date +%s%N)
  "$work/reverie" agent --data "$data" 2>/dev/null & pid=$!
  wait_healthy
  t1=$(date +%s%N)
  times+=($(( (t1 - t0) / 1000000 )))
  kill -TERM $pid; wait $pid || true
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "cold start to /healthz 200 (ms, $RUNS runs): median ${sorted[$((RUNS/2))]}  min ${sorted[0]}  max ${sorted[$((RUNS-1))]}"

"$work/reverie" agent --data "$data" 2>/dev/null & pid=$!
wait_healthy
sleep "$IDLE"
rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
echo "idle RSS after ${IDLE}s: $((rss / 1024)) MiB ($rss kB)"
kill -TERM $pid; wait $pid || true
pid=
size=$(stat -c %s "$work/reverie")
echo "stripped binary: $((size / 1024 / 1024)) MiB ($size bytes)"
