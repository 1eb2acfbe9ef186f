#!/usr/bin/env bash
# What each vendored fork under third_party/ saves: builds reverie as it is
# and once per fork with that fork's `replace` dropped (the upstream release
# it is a copy of, fetched through the module proxy; an alternative go.mod
# in a scratch directory, this tree is not touched), plus once with every
# fork dropped, then measures them all interleaved:
#   - idle RssAnon of `reverie agent` (bench/idlemem: AGENTS agents of each
#     build started together per round, read 12 s after ready), on existing
#     and on freshly `init`ed data dirs
#   - start to the first /healthz 200 on an existing data dir (bench/starttime)
# Upstream mautrix is built with `-tags goolm`: without it the build needs
# libolm (cgo), which is why that fork exists (third_party/mautrix/REVERIE.md).
# Usage: bench/forks.sh [ROUNDS [AGENTS [STARTS]]]     (defaults 3 2 15)
set -euo pipefail
ROUNDS=${1:-3}
AGENTS=${2:-2}
STARTS=${3:-15}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# build NAME [MODULE…]: reverie with the replace of each MODULE dropped.
# A build that fails (Reverie calls what a fork adds, as sqlite.ReleaseMemory
# calls third_party/memory's RequestTrim) is reported and left out.
build() {
  local name=$1 tags=() mod
  shift
  cp go.mod "$work/$name.mod"
  cp go.sum "$work/$name.sum"
  for mod in "$@"; do
    sed -i "\|^replace $mod |d" "$work/$name.mod"
    [ "$mod" != maunium.net/go/mautrix ] || tags=(-tags goolm)
  done
  mkdir -p "$work/$name"
  if ! CGO_ENABLED=0 GOFLAGS=-mod=mod go build -modfile="$work/$name.mod" "${tags[@]}" \
    -trimpath -ldflags "-s -w" -o "$work/$name/reverie" ./cmd/reverie 2>"$work/$name.err"; then
    echo "$name: does not build with upstream's release, left out:" >&2
    head -5 "$work/$name.err" >&2
    return 1
  fi
  bins+=("$work/$name/reverie")
}

bins=()
build fork
mods=()
for mod in $(awk '$1 == "replace" && $5 ~ /^\.\/third_party\// {print $2}' go.mod); do
  name="upstream-$(basename "$mod" | sed 's/^v[0-9]*$//')"
  [ "$name" != upstream- ] || name="upstream-$(basename "$(dirname "$mod")")"
  if build "$name" "$mod"; then mods+=("$mod"); fi
done
build upstream-all "${mods[@]}"
for b in "${bins[@]}"; do printf '%-14s %s\n' "$(basename "$(dirname "$b")")" "$(stat -c %s "$b") bytes"; done

go build -o "$work/idlemem" ./bench/idlemem
go build -o "$work/starttime" ./bench/starttime
"$work/idlemem" -rounds "$ROUNDS" -agents "$AGENTS" "${bins[@]}"
"$work/idlemem" -rounds "$ROUNDS" -agents "$AGENTS" -fresh "${bins[@]}"
"$work/starttime" -runs "$STARTS" -mode start "${bins[@]}"
"$work/starttime" -runs "$STARTS" -mode send "${bins[@]}"
# Package inits (no noise: what each build allocates and spends before main).
forked=$(IFS='|'; echo "${mods[*]}" | sed 's/\./\\./g')
for b in "${bins[@]}"; do
  GODEBUG=inittrace=1 "$b" version 2>&1 >/dev/null | awk -v n="$(basename "$(dirname "$b")")" -v re="^($forked)(/|$)" \
    '$1 == "init" {ms += $5; bytes += $8; if ($2 ~ re) {fms += $5; fb += $8}}
     END {printf "  %-24s package inits: %5.2f ms, %7.0f KB heap; of which the forked modules: %5.2f ms, %6.0f KB\n", n, ms, bytes/1000, fms, fb/1000}'
done
