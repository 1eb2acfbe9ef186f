#!/usr/bin/env bash
# Idle memory of `reverie agent` with the Matrix channel connected and
# syncing (end-to-end encryption on, one encrypted direct chat answered),
# next to the same agent without Matrix: RssAnon (what the process alone
# pays) and Pss, sampled FIRST and SECOND seconds after the agent is ready.
# Runs a local Dendrite (extensions/matrix/testdata/build-dendrite.sh builds
# it) on 127.0.0.1; no model is configured (idle footprint).
# Usage: bench/matrix.sh [FIRST [SECOND]]     (defaults 10 60)
set -euo pipefail
FIRST=${1:-10}
SECOND=${2:-60}
cd "$(dirname "$0")/.."
dendrite=$(extensions/matrix/testdata/build-dendrite.sh)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/reverie" ./cmd/reverie

# The homeserver.
hsport=$(( 20000 + RANDOM % 20000 ))
mkdir -p "$work/hs"
"$dendrite/generate-config" -ci -dir "$work/hs" \
  | sed 's/disable_federation: false/disable_federation: true/; s/registration_disabled: false/registration_disabled: true/; s/level: trace/level: warn/' \
  > "$work/hs/dendrite.yaml"
(cd "$work/hs" && "$dendrite/generate-keys" -private-key matrix_key.pem >/dev/null)
(cd "$work/hs" && exec "$dendrite/dendrite" -config dendrite.yaml -http-bind-address "127.0.0.1:$hsport" >"$work/hs/log" 2>&1) &
pids+=($!)
for i in $(seq 600); do curl -sf "http://127.0.0.1:$hsport/_matrix/client/versions" >/dev/null && break; sleep 0.1; done
for u in reverie alice; do
  (cd "$work/hs" && "$dendrite/create-account" -config dendrite.yaml -username $u -password "$u-password-123" \
    -url "http://127.0.0.1:$hsport" >/dev/null 2>&1)
done

kib() { awk -v k="$2" '$1 == k":" {print $2; exit}' "$1"; }
sample() {
  printf '  %-22s RssAnon %6d KiB (%5.1f MiB)  Pss %6d KiB\n' "$1" "$(kib "/proc/$2/status" RssAnon)" \
    "$(echo "$(kib "/proc/$2/status" RssAnon)/1024" | bc -l)" "$(kib "/proc/$2/smaps_rollup" Pss)"
}

# measure LABEL: runs the agent with the current environment.
measure() {
  local label=$1 port pid
  rm -rf "$work/data"
  "$work/reverie" init --data "$work/data" >/dev/null
  port=$(( 20000 + RANDOM % 20000 ))
  REVERIE_WEB__LISTEN=127.0.0.1:$port "$work/reverie" agent --data "$work/data" 2>"$work/agent.log" & pid=$!
  pids+=($pid)
  for i in $(seq 3000); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)" = 200 ] && break
    sleep 0.01
  done
  if [ "$label" = matrix ]; then
    for i in $(seq 300); do grep -q "matrix connected" "$work/agent.log" && break; sleep 0.1; done
    grep -q "matrix connected" "$work/agent.log" || { echo "matrix did not connect:"; tail "$work/agent.log"; exit 1; }
    # Alice opens an encrypted direct chat; the bot joins (keys are shared).
    tok=$(curl -sf -XPOST "http://127.0.0.1:$hsport/_matrix/client/v3/login" \
      -d '{"type":"m.login.password","identifier":{"type":"m.id.user","user":"alice"},"password":"alice-password-123"}' | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
    curl -sf -XPOST -H "Authorization: Bearer $tok" "http://127.0.0.1:$hsport/_matrix/client/v3/createRoom" \
      -d '{"preset":"trusted_private_chat","is_direct":true,"invite":["@reverie:localhost"],"initial_state":[{"type":"m.room.encryption","state_key":"","content":{"algorithm":"m.megolm.v1.aes-sha2"}}]}' >/dev/null
  fi
  sleep "$FIRST"
  if [ "$label" = matrix ]; then
    grep -q "joined a matrix room" "$work/agent.log" || { echo "the bot did not join the encrypted chat:"; tail "$work/agent.log"; exit 1; }
  fi
  echo "reverie agent, $label, ${FIRST} s after ready:"; sample agent $pid
  sleep $(( SECOND - FIRST ))
  echo "reverie agent, $label, ${SECOND} s after ready:"; sample agent $pid
  kill -TERM $pid; wait $pid || true
}

measure "without matrix"
export REVERIE_MATRIX__HOMESERVER=http://127.0.0.1:$hsport REVERIE_MATRIX__USER_ID=@reverie:localhost \
  REVERIE_MATRIX__PASSWORD=reverie-password-123 REVERIE_MATRIX__ALLOWED_USERS=@alice:localhost
measure matrix
