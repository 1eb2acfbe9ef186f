#!/usr/bin/env bash
# Measures, for `reverie agent` on an existing data dir:
#   - cold start to the first 200 from /healthz (median and min over RUNS starts)
#   - idle RSS after IDLE seconds (web listener, event bus and extensions running;
#     freed start-up heap is returned 5 s after "agent ready", see internal/footprint;
#     bench/footprint.sh measures RssAnon and Pss, the figures that count)
#   - RSS again after a round of web requests (page, API reads, one message)
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
tok=$(tr -d '\n' < "$data/secrets/web_token")
curl -s -o /dev/null "http://127.0.0.1:$port/"
for p in info threads memories pulse skills tasks receipts workflows usage world interactions; do
  curl -s -o /dev/null -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/api/v1/$p"
done
# One turn (without a configured model it fails with 502 and a reply saying how to configure one).
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
  -d '{"text":"hello"}' "http://127.0.0.1:$port/api/v1/threads/web:bench/messages")
case $code in 200|502) ;; *) echo "warning: the message request answered $code" ;; esac
sleep 2
rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
echo "RSS after a round of requests: $((rss / 1024)) MiB ($rss kB)"
kill -TERM $pid; wait $pid || true
pid=
size=$(stat -c %s "$work/reverie")
echo "stripped binary: $((size / 1024 / 1024)) MiB ($size bytes)"
