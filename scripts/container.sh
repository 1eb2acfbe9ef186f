#!/usr/bin/env bash
# Builds the container image of Containerfile with podman (vfs storage in a
# store of its own, so it works where overlay mounts are not allowed), then
# checks the image without running a container (running one may be refused
# in a sandbox): the image's own reverie binary, taken from its filesystem
# (podman create + export), must run and say the version it was stamped
# with, and the image must run as user 65532 with /data a volume and a
# health check.
#
# Usage: scripts/container.sh [TAG]        (default reverie:dev)
#   VERSION=v0.3.0 scripts/container.sh reverie:v0.3.0
#   PODMAN_STORE=DIR keeps the image store elsewhere (default
#   /var/tmp/reverie-podman).
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-reverie:dev}
version=${VERSION:-v0.0.0-$(git rev-parse --short=12 HEAD 2>/dev/null || echo dev)}
store=${PODMAN_STORE:-/var/tmp/reverie-podman}
podman=(podman --storage-driver vfs --root "$store/storage" --runroot "$store/run")
certs=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$certs" ]; then
  echo "container.sh: $certs is missing (apt-get install ca-certificates)" >&2
  exit 1
fi

work=$(mktemp -d)
cid=
cleanup() {
  if [ -n "$cid" ]; then "${podman[@]}" rm -f "$cid" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
ctx=$work/context
mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/etc/ssl/certs" "$ctx/rootfs/tmp" "$ctx/data"
chmod 1777 "$ctx/rootfs/tmp"
chmod 0700 "$ctx/data"
echo "--- static binaries ($version)"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$version" \
  -o "$ctx/rootfs/usr/local/bin/" ./cmd/reverie ./cmd/reverie-supervisor
cp "$certs" "$ctx/rootfs/etc/ssl/certs/"
# the binary embeds a table derived from WordNet, whose licence asks for its
# notice on every copy, and USE-lite's weights (Apache-2.0)
mkdir -p "$ctx/rootfs/usr/share/doc/reverie"
cp internal/lexicon/LICENSE-WordNet internal/embed/sentence/LICENSE-USE-lite "$ctx/rootfs/usr/share/doc/reverie/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nreverie:x:65532:65532:Reverie:/data:/sbin/nologin\n' > "$ctx/rootfs/etc/passwd"
printf 'root:x:0:\nreverie:x:65532:\n' > "$ctx/rootfs/etc/group"
cp Containerfile "$ctx/"

echo "--- podman build $tag"
"${podman[@]}" build --format docker --pull=never -f "$ctx/Containerfile" -t "$tag" "$ctx"

echo "--- checks"
fail() { echo "container.sh: $*" >&2; exit 1; }
user=$("${podman[@]}" image inspect --format '{{.Config.User}}' "$tag")
[ "$user" = "65532:65532" ] || fail "the image runs as '$user', want 65532:65532"
"${podman[@]}" image inspect --format '{{json .Config.Volumes}}' "$tag" | grep -q '"/data"' || fail "/data is not a volume"
"${podman[@]}" image inspect --format '{{json .Config.Healthcheck}}' "$tag" | grep -q 'healthz' || fail "no health check on /healthz"
cid=$("${podman[@]}" create "$tag")
"${podman[@]}" export "$cid" | tar -x -C "$work" usr/local/bin/reverie usr/local/bin/reverie-supervisor data tmp
got=$("$work/usr/local/bin/reverie" version)
[[ $got == "reverie $version"* ]] || fail "the image's reverie says '$got', not $version"
file_static=$(od -An -c -N4 "$work/usr/local/bin/reverie" | tr -d ' ')
[ "$file_static" = '177ELF' ] || fail "the image's reverie is not an ELF binary"
if command -v ldd >/dev/null && ldd "$work/usr/local/bin/reverie" 2>&1 | grep -q '=>'; then
  fail "the image's reverie is dynamically linked"
fi
owner=$(stat -c '%u' "$work/data")
[ "$owner" = 65532 ] || fail "/data belongs to uid $owner, want 65532"
echo "image $tag: $got, user $user, /data a volume owned by 65532, HEALTHCHECK reverie health"
