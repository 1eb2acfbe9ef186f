#!/usr/bin/env bash
# Checks that every vendored fork under third_party/ differs from the upstream
# release it is a copy of by exactly what its REVERIE.md lists, and nothing else.
#
# Each third_party/NAME has a REVERIE.md with one fenced block tagged
# `forkcheck`, one entry a line (blank lines and lines starting with # are
# skipped):
#   upstream MODULE VERSION    the release (fetched with `go mod download`
#                              through the module proxy, GOPROXY/GOFLAGS as
#                              the environment has them)
#   changed  PATH  REASON      a file of the release the fork changes
#   added    PATH  REASON      a file the fork adds
#   removed  GLOB  REASON      files of the release the fork leaves out
#                              (a bash pattern on the path, `*` crosses /)
# and a REVERIE.patch with the exact unified diff of the changed and added
# files (`diff -u`, labels a/PATH and b/PATH, /dev/null for an added file's
# old side, files in `LC_ALL=C sort` order).
# It fails when:
#   - a file of the release is missing from the fork and no `removed` entry
#     matches it, or a `removed` entry matches no missing file or matches a
#     file the fork has;
#   - the set of files the fork adds, or the set it changes, is not exactly
#     the `added` or `changed` entries;
#   - REVERIE.patch is not byte for byte the diff of those files (so an
#     unlisted hunk in a listed file fails too);
#   - go.mod does not replace MODULE VERSION with ./third_party/NAME, or
#     replaces a module with a third_party directory that has no REVERIE.md.
#
# Usage: .ci/forkcheck.sh [-w] [ROOT]
#   ROOT  the repository to check (default: this one)
#   -w    rewrite each fork's REVERIE.patch from the files (after a deliberate,
#         listed change; the lists in REVERIE.md are still edited by hand)
set -euo pipefail
shopt -s nullglob
write=
if [ "${1:-}" = -w ]; then write=1; shift; fi
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
export LC_ALL=C
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "forkcheck: $*" >&2; failed=1; }

# entries FILE: the lines of the forkcheck block of REVERIE.md.
entries() {
  awk '/^```forkcheck[[:space:]]*$/ {on = 1; n++; next} on && /^```/ {on = 0; next}
       on && NF && $1 !~ /^#/ {print} END {if (n != 1) exit 1}' "$1"
}

# files DIR: every file under DIR, relative, sorted.
files() { (cd "$1" && find . -type f | sed 's|^\./||' | sort); }

# patchof UP FORK PATH…: the unified diff of each PATH between the two trees.
patchof() {
  local up=$1 fork=$2 p
  shift 2
  for p in "$@"; do
    if [ -e "$up/$p" ]; then
      diff -u --label "a/$p" --label "b/$p" "$up/$p" "$fork/$p" || [ $? = 1 ]
    else
      diff -u --label /dev/null --label "b/$p" /dev/null "$fork/$p" || [ $? = 1 ]
    fi
  done
}

forks=0
for md in "$root"/third_party/*/REVERIE.md; do
  dir=$(dirname "$md")
  name=third_party/$(basename "$dir")
  forks=$((forks + 1))
  if ! entries "$md" >"$tmp/entries"; then
    fail "$name/REVERIE.md: no single \`\`\`forkcheck block"
    continue
  fi
  read -r _ module version < <(awk '$1 == "upstream"' "$tmp/entries") || true
  if [ -z "${module:-}" ] || [ -z "${version:-}" ] || [ "$(awk '$1 == "upstream"' "$tmp/entries" | wc -l)" != 1 ]; then
    fail "$name/REVERIE.md: needs one 'upstream MODULE VERSION' line"
    continue
  fi
  if ! awk -v m="$module" -v v="$version" -v d="./$name" \
      '$1 == "replace" && $2 == m && $3 == v && $4 == "=>" && ($5 == d || $5 == d "/") {ok = 1} END {exit !ok}' "$root/go.mod"; then
    fail "$name: go.mod has no 'replace $module $version => ./$name'"
  fi
  bad=$(awk '$1 != "upstream" && $1 != "changed" && $1 != "added" && $1 != "removed" || ($1 != "upstream" && NF < 3)' "$tmp/entries")
  [ -z "$bad" ] || fail "$name/REVERIE.md: entries need KIND PATH REASON (KIND upstream, changed, added or removed): $bad"

  # The release, through the module proxy (outside any module, so that this
  # repository's replace directives do not apply).
  if ! json=$(cd "$tmp" && GOWORK=off go mod download -json "$module@$version" 2>&1); then
    fail "$name: go mod download $module@$version: $json"
    continue
  fi
  up=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$up" ] || [ ! -d "$up" ]; then
    fail "$name: go mod download $module@$version gave no directory: $json"
    continue
  fi

  files "$up" >"$tmp/up"
  files "$dir" | grep -vx -e REVERIE.md -e REVERIE.patch >"$tmp/fork" || true
  awk '$1 == "changed" {print $2}' "$tmp/entries" | sort >"$tmp/changed.want"
  awk '$1 == "added" {print $2}' "$tmp/entries" | sort >"$tmp/added.want"
  awk '$1 == "removed" {print $2}' "$tmp/entries" >"$tmp/removed.globs"

  # Removed: every missing file matched by an entry, every entry matching
  # at least one missing file and no file the fork has.
  comm -23 "$tmp/up" "$tmp/fork" >"$tmp/missing"
  declare -A used=()
  while IFS= read -r f; do
    hit=
    while IFS= read -r g; do
      # shellcheck disable=SC2053 # $g is a pattern on purpose
      if [[ $f == $g ]]; then hit=1; used[$g]=1; break; fi
    done <"$tmp/removed.globs"
    [ -n "$hit" ] || fail "$name: $f of $module@$version is missing from the fork and not listed as removed"
  done <"$tmp/missing"
  while IFS= read -r g; do
    [ -n "${used[$g]:-}" ] || fail "$name/REVERIE.md: 'removed $g' matches no file missing from the fork"
  done <"$tmp/removed.globs"
  comm -12 "$tmp/up" "$tmp/fork" >"$tmp/both"
  while IFS= read -r f; do
    while IFS= read -r g; do
      # shellcheck disable=SC2053
      if [[ $f == $g ]]; then fail "$name: $f is listed as removed ('removed $g') but the fork has it"; fi
    done <"$tmp/removed.globs"
  done <"$tmp/both"
  unset used

  # Added and changed: exactly the listed files.
  comm -13 "$tmp/up" "$tmp/fork" >"$tmp/added"
  : >"$tmp/changed"
  while IFS= read -r f; do
    cmp -s "$up/$f" "$dir/$f" || echo "$f" >>"$tmp/changed"
  done <"$tmp/both"
  for kind in added changed; do
    while IFS= read -r f; do fail "$name: $f is $kind but REVERIE.md does not list it ('$kind $f REASON')"; done < <(comm -23 "$tmp/$kind" "$tmp/$kind.want")
    while IFS= read -r f; do fail "$name/REVERIE.md: lists '$kind $f' but the fork does not have it $kind"; done < <(comm -13 "$tmp/$kind" "$tmp/$kind.want")
  done

  # The hunks: REVERIE.patch is the diff of the changed and added files.
  mapfile -t diffed < <(sort -u "$tmp/changed" "$tmp/added")
  patchof "$up" "$dir" "${diffed[@]}" >"$tmp/patch"
  if [ -n "$write" ]; then
    cp "$tmp/patch" "$dir/REVERIE.patch"
    echo "forkcheck: wrote $name/REVERIE.patch (${#diffed[@]} files)"
  elif [ ! -f "$dir/REVERIE.patch" ]; then
    fail "$name: no REVERIE.patch (write it with .ci/forkcheck.sh -w once the change is listed)"
  elif ! cmp -s "$tmp/patch" "$dir/REVERIE.patch"; then
    fail "$name: the fork's changes are not REVERIE.patch; what differs (- REVERIE.patch, + the fork's diff now):"
    diff -u --label REVERIE.patch --label now "$dir/REVERIE.patch" "$tmp/patch" | head -60 >&2 || true
  fi
  echo "forkcheck: $name = $module@$version + $(wc -l <"$tmp/changed") changed, $(wc -l <"$tmp/added") added, $(wc -l <"$tmp/missing") removed files"
done

# Every replace into third_party/ is a checked fork.
while read -r module dest; do
  [ -f "$root/${dest#./}/REVERIE.md" ] || fail "go.mod replaces $module with $dest, which has no REVERIE.md"
done < <(awk '$1 == "replace" && $5 ~ /^\.\/third_party\// {print $2, $5}' "$root/go.mod")
for d in "$root"/third_party/*/; do
  [ -f "$d/REVERIE.md" ] || fail "third_party/$(basename "$d") has no REVERIE.md"
done

if [ "$failed" != 0 ]; then
  echo "forkcheck: FAILED" >&2
  exit 1
fi
echo "forkcheck: $forks forks match their upstream releases and REVERIE.md"
