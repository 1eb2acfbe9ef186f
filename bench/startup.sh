#!/usr/bin/env bash
# Measures, for the reverie built from this tree (and for any other builds
# given, interleaved with it so that a noisy machine slows them alike):
#   - cold start of `reverie agent` on an existing data dir to the first 200
#     from /healthz (polled every 0.5 ms; median, min, max over RUNS starts)
#   - a one-shot `reverie send hi`, whole process, against a local
#     OpenAI-compatible model that answers at once (bench/starttime serves it)
#   - the stripped binary size
# Where the start-up time goes: REVERIE_DEBUG_START=1 reverie agent logs each
# phase's duration once ready; GODEBUG=inittrace=1 shows package inits.
# Memory: bench/footprint.sh.
# Usage: bench/startup.sh [RUNS] [OTHER_BINARY…]      (default 9 runs)
set -euo pipefail
RUNS=${1:-9}
shift || true
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/reverie" ./cmd/reverie
go build -o "$work/starttime" ./bench/starttime
"$work/starttime" -runs "$RUNS" -mode start "$work/reverie" "$@"
"$work/starttime" -runs "$RUNS" -mode send "$work/reverie" "$@"
size=$(stat -c %s "$work/reverie")
echo "stripped binary: $((size / 1024 / 1024)) MiB ($size bytes)"
