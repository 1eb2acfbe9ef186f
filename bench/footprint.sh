#!/usr/bin/env bash
# Measures the memory a running Reverie really costs, for `reverie agent` and
# for `reverie run` (the supervisor and its agent child, each on its own line):
#   VmRSS   resident set (includes the executable's pages, shared with the page cache)
#   RssAnon private anonymous memory: heap, stacks, Go runtime (what the process alone pays)
#   Pss     proportional set size from /proc/PID/smaps_rollup (shared pages split among sharers)
# sampled FIRST and SECOND seconds after /healthz answers 200, once on a fresh
# data dir (just `reverie init`ed: the first start creates reverie.db and runs
# the migrations) and once on that same, now existing, data dir.
# No model is configured there: this is the idle footprint.
# Then the footprint after use: `reverie agent` on a fresh data dir against a
# local fake model (bench/turnload footprint, turns through the HTTP API,
# episodes on), RssAnon and Pss (with the share of the memory indexes'
# files in it: vectors, sketches, metadata, term ids) idle SECOND s after ready, then after 20 and after
# TURNS turns of one conversation, each at once and SECOND s later (TURNS 0
# skips it).
# reverie and reverie-supervisor are built into the same directory, so `run`
# hands over to the lean supervisor; its line names the executable that
# supervises (from /proc/PID/exe): `run (reverie-supervisor)`, or `run (reverie)`
# when it supervises in process (REVERIE_SUPERVISOR=builtin, or REVERIE_BIN
# without reverie-supervisor next to it).
# Usage: bench/footprint.sh [FIRST [SECOND [TURNS]]]     (defaults 10 60 500; `bench/footprint.sh 2 5 50` for a quick run)
# REVERIE_BENCH_EMBEDDING=MODEL sets every agent's memory.embedding.model
# (e.g. builtin/hashing, the offline hashing embedder; default: the sentence
# encoder built into the binary, builtin/use-lite).
set -euo pipefail
FIRST=${1:-10}
SECOND=${2:-60}
TURNS=${3:-500}
[ "$SECOND" -ge "$FIRST" ] || { echo "SECOND ($SECOND) must be >= FIRST ($FIRST)" >&2; exit 2; }
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
bin=${REVERIE_BIN:-}
if [ -z "$bin" ]; then
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/" ./cmd/reverie ./cmd/reverie-supervisor
  bin="$work/reverie"
fi
port=$(( 20000 + RANDOM % 20000 ))
export REVERIE_WEB__LISTEN=127.0.0.1:$port
embedding=${REVERIE_BENCH_EMBEDDING:-}
if [ -n "$embedding" ]; then export REVERIE_MEMORY__EMBEDDING__MODEL=$embedding; fi

wait_healthy() {
  local i
  for i in $(seq 3000); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)" = 200 ] && return 0
    kill -0 "$pid" 2>/dev/null || { echo "reverie exited before it was ready" >&2; return 1; }
    sleep 0.01
  done
  echo "reverie was not ready after 30 s" >&2; return 1
}

kib() { awk -v k="$2" '$1 == k":" {print $2; exit}' "$1"; }

# sample LABEL PID: one line of figures in KiB.
sample() {
  local rss anon pss
  rss=$(kib "/proc/$2/status" VmRSS)
  anon=$(kib "/proc/$2/status" RssAnon)
  pss=$(kib "/proc/$2/smaps_rollup" Pss)
  printf '  %-28s VmRSS %6d KiB  RssAnon %6d KiB (%5.1f MiB)  Pss %6d KiB\n' "$1" "$rss" "$anon" "$(echo "$anon/1024" | bc -l)" "$pss"
}

# measure MODE DIRLABEL
measure() {
  local mode=$1 label=$2 child name
  "$bin" "$mode" --data "$work/data" 2>/dev/null & pid=$!
  wait_healthy
  child=
  name=$mode
  if [ "$mode" = run ]; then
    child=$(pgrep -P "$pid" | head -n1 || true)
    name="run ($(basename "$(readlink "/proc/$pid/exe")"))"
  fi
  sleep "$FIRST"
  echo "reverie $mode, $label data dir, ${FIRST} s after ready:"
  sample "$name" "$pid"
  [ -z "$child" ] || sample "agent (child of run)" "$child"
  sleep $(( SECOND - FIRST ))
  echo "reverie $mode, $label data dir, ${SECOND} s after ready:"
  sample "$name" "$pid"
  [ -z "$child" ] || sample "agent (child of run)" "$child"
  kill -TERM "$pid"; wait "$pid" || true
  pid=
}

for mode in agent run; do
  rm -rf "$work/data"
  "$bin" init --data "$work/data" >/dev/null
  measure "$mode" fresh
  measure "$mode" existing
done

if [ "$TURNS" -gt 0 ]; then
  go build -o "$work/turnload" ./bench/turnload
  checkpoints=$TURNS
  [ "$TURNS" -le 20 ] || checkpoints="20,$TURNS"
  "$work/turnload" footprint -turns "$checkpoints" -settle "${SECOND}s" -embedding "$embedding" "$bin"
fi
