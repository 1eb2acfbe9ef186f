#!/usr/bin/env bash
# Release build: static, stamped binaries of reverie and reverie-supervisor
# for Linux and macOS on amd64 and arm64 (CGO_ENABLED=0, -trimpath, the
# version stamped with -ldflags "-X main.version=VERSION" as
# cmd/reverie/version.go reads it, which adds the source revision when go
# could stamp it from git), one tarball per platform with the README, and
# SHA256SUMS.
# The binary built for this machine is run to check its stamp.
#
# Usage: scripts/release.sh VERSION [OUT]            (OUT defaults to dist)
#   scripts/release.sh v0.3.0                         the four platforms
#   PLATFORMS=linux/amd64 scripts/release.sh v0.3.0   one platform only
# Output: OUT/reverie-VERSION-OS-ARCH.tar.gz (reverie, reverie-supervisor,
# README.md, LICENSE-WordNet: the binary embeds a table derived from WordNet,
# whose licence asks for its notice on every copy; LICENSE-USE-lite: and the
# weights of Universal Sentence Encoder Lite, Apache-2.0) and
# OUT/SHA256SUMS-VERSION.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: scripts/release.sh VERSION [OUT]}
out=${2:-dist}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
case $version in
  v[0-9]*) ;;
  *) echo "release.sh: VERSION should look like v1.2.3 (got $version)" >&2; exit 2 ;;
esac
mkdir -p "$out"
tarballs=()
for p in $platforms; do
  os=${p%/*}
  arch=${p#*/}
  name=reverie-$version-$os-$arch
  dir=$out/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "--- $name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$version" \
    -o "$dir/" ./cmd/reverie ./cmd/reverie-supervisor
  cp README.md internal/lexicon/LICENSE-WordNet internal/embed/sentence/LICENSE-USE-lite "$dir/"
  tar -C "$out" -czf "$out/$name.tar.gz" "$name"
  tarballs+=("$name.tar.gz")
done
(cd "$out" && sha256sum "${tarballs[@]}" > "SHA256SUMS-$version")
host=$(go env GOOS)/$(go env GOARCH)
if [[ " $platforms " == *" $host "* ]]; then
  got=$("$out/reverie-$version-$(go env GOOS)-$(go env GOARCH)/reverie" version)
  if [[ $got != "reverie $version"* ]]; then
    echo "release.sh: the built binary says '$got', not $version" >&2
    exit 1
  fi
  echo "--- $host binary: $got"
fi
ls -l "$out"/*.tar.gz "$out/SHA256SUMS-$version"
