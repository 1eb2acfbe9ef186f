#!/usr/bin/env bash
# Turn latency and input tokens per turn along one long conversation, the way
# a user of the HTTP API has it: internal/apptest's BenchmarkHTTPTurns runs
# the whole app in process on a fresh data dir (SQLite, episodes on, the
# default history budget) with the web extension, and POSTs each message to
# /api/v1/threads/web:long/messages; the model is the fake OpenAI-compatible
# server of llm/llmtest, which answers at once with replies of realistic size
# (so what is timed is Reverie's own cost of a turn).
#
# It prints, for turns 10, 100 and 1,000: the median latency of the 10 turns
# around each (pooled over RUNS conversations, each on a fresh app), the mean
# input tokens per turn (in-tok: the turn's own model calls; all-tok: with
# the compaction calls spread over the turns), the ratios turn 1,000 / turn 10
# (latency) and turn 1,000 / turn 100 (tokens), and compactions per run.
#
# Usage: bench/turns.sh [RUNS [TURNS]] [-- GO_TEST_FLAGS…]   (defaults 3 1000)
#   bench/turns.sh 1 300                        a quick look
#   bench/turns.sh 3 1000 -- -cpuprofile cpu.out   then: go tool pprof -top cpu.out
#   REVERIE_BENCH_EMBEDDING=builtin/hashing bench/turns.sh 3 1000
#                                               memories embedded by the hashing embedder instead of
#                                               the default, the built-in sentence encoder
#   REVERIE_BENCH_CONVERSATIONS=../shared/data/longmemeval/longmemeval-s-dev.json bench/turns.sh 3 1000
#                                               real conversations' messages and replies (LongMemEval's
#                                               sessions) instead of texts made from a word list
# The machine's load shows in the latencies: compare ratios, not absolute
# figures, and run it more than once on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3
turns=1000
if [ $# -gt 0 ] && [ "$1" != "--" ]; then runs=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then turns=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
if [ -n "${REVERIE_BENCH_CONVERSATIONS:-}" ]; then # the test runs in internal/apptest
  REVERIE_BENCH_CONVERSATIONS=$(realpath "$REVERIE_BENCH_CONVERSATIONS")
  export REVERIE_BENCH_CONVERSATIONS
fi
REVERIE_BENCH_RUNS=$runs REVERIE_BENCH_TURNS=$turns \
  go test -run '^$' -bench '^BenchmarkHTTPTurns$' -benchtime=1x -timeout 2h "$@" ./internal/apptest/ |
  awk '/^BenchmarkHTTPTurns/ {
    for (i = 3; i < NF; i += 2) printf "%-22s %s\n", $(i+1), $i
    next
  }
  /^(ok|FAIL|PASS)/ || /--- FAIL/ || /_test.go:[0-9]+:/ { print }'
