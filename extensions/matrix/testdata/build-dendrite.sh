#!/usr/bin/env bash
# Builds Dendrite v0.15.2, the Matrix homeserver the Matrix channel's tests
# run against, into a cache directory outside the repository, and prints
# that directory. Dendrite is AGPL: it is a test tool, built in a throwaway
# module and never imported by Reverie.
#
#   extensions/matrix/testdata/build-dendrite.sh          # build (or reuse) and print the directory
#   REVERIE_DENDRITE_DIR=/some/dir build-dendrite.sh       # build into another directory
#
# The tests look for the binaries in $REVERIE_DENDRITE_DIR, else in
# ${XDG_CACHE_HOME:-$HOME/.cache}/reverie/dendrite-v0.15.2 (this script's
# default). About 4 minutes on a cold module cache, 1 on a warm one.
set -euo pipefail
version=v0.15.2
dir=${REVERIE_DENDRITE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/reverie/dendrite-$version}
bins=(dendrite create-account generate-keys generate-config)
have=1
for b in "${bins[@]}"; do [ -x "$dir/$b" ] || have=0; done
if [ "$have" = 1 ]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
mod=$(mktemp -d)
trap 'rm -rf "$mod"' EXIT
cd "$mod"
{
  go mod init dendrite-build
  # Each command is asked for by name: `go get github.com/element-hq/dendrite@…`
  # alone leaves go.sum without the entries the commands' packages need.
  pkgs=()
  for b in "${bins[@]}"; do pkgs+=("github.com/element-hq/dendrite/cmd/$b@$version"); done
  go get "${pkgs[@]}"
  pkgs=()
  for b in "${bins[@]}"; do pkgs+=("github.com/element-hq/dendrite/cmd/$b"); done
  CGO_ENABLED=0 GOBIN="$dir" go install "${pkgs[@]}"
} >&2
echo "$dir"
