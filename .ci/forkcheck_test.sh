#!/usr/bin/env bash
# Proves that .ci/forkcheck.sh fails on every kind of difference from upstream
# that REVERIE.md does not list, and passes on the fork as it is: each case
# copies one fork (third_party/memory, the smallest) and a go.mod replacing
# only it into a scratch repository, changes one thing, and expects the check
# to fail with the message naming it.
# Usage: .ci/forkcheck_test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
check=$PWD/.ci/forkcheck.sh
fork=third_party/memory
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# fresh: a scratch repository with only $fork and its replace.
fresh() {
  rm -rf "$work/repo"
  mkdir -p "$work/repo/third_party"
  cp -r "$fork" "$work/repo/third_party/"
  chmod -R u+w "$work/repo"
  { grep -v '^replace ' go.mod; grep "^replace .* => ./$fork\$" go.mod; } >"$work/repo/go.mod"
}

# expect NAME WANT: the check on the scratch repository fails and says WANT
# (or, with WANT "ok", passes).
expect() {
  local name=$1 want=$2 out rc=0
  out=$(bash "$check" "$work/repo" 2>&1) || rc=$?
  if [ "$want" = ok ]; then
    if [ $rc = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name: the check failed on an unchanged fork:"; echo "$out"; fi
    return
  fi
  if [ $rc != 0 ] && grep -qF -- "$want" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: want a failure saying \"$want\", got exit $rc:"; echo "$out"
  fi
}

fresh
expect "unchanged fork" ok

fresh
sed -i 's/^const hotBytes = 64 << 10$/const hotBytes = 128 << 10/' "$work/repo/$fork/memory.go"
expect "another value on a listed line" "the fork's changes are not REVERIE.patch"

fresh
sed -i '1s/^/\/\/ an unlisted comment\n/' "$work/repo/$fork/memory.go"
expect "an unlisted hunk in a listed file" "the fork's changes are not REVERIE.patch"

fresh
echo '// an unlisted comment' >>"$work/repo/$fork/mmap_unix.go"
expect "a change to an unlisted file" "mmap_unix.go is changed but REVERIE.md does not list it"

fresh
printf 'package memory\n' >"$work/repo/$fork/extra.go"
expect "an unlisted added file" "extra.go is added but REVERIE.md does not list it"

fresh
rm "$work/repo/$fork/mmap_unix.go"
expect "an unlisted removed file" "mmap_unix.go of modernc.org/memory@v1.12.1 is missing from the fork and not listed as removed"

fresh
cp "$(cd "$work" && GOWORK=off go mod download -json modernc.org/memory@v1.12.1 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/Makefile" "$work/repo/$fork/"
expect "a file listed as removed put back" "Makefile is listed as removed ('removed Makefile') but the fork has it"

fresh
sed -i 's/^changed  memory.go /changed  memory32.go /' "$work/repo/$fork/REVERIE.md"
expect "a listed change that is not there" "lists 'changed memory32.go' but the fork does not have it changed"

fresh
sed -i '/^removed  logo.png/d' "$work/repo/$fork/REVERIE.md"
expect "a removal no longer listed" "logo.png of modernc.org/memory@v1.12.1 is missing from the fork and not listed as removed"

fresh
sed -i 's/^upstream modernc.org\/memory v1.12.1$/upstream modernc.org\/memory v1.12.0/' "$work/repo/$fork/REVERIE.md"
expect "another upstream version than go.mod's" "go.mod has no 'replace modernc.org/memory v1.12.0 => ./$fork'"

fresh
sed -i '/^```forkcheck/,/^```$/d' "$work/repo/$fork/REVERIE.md"
expect "no forkcheck block" "no single \`\`\`forkcheck block"

fresh
rm "$work/repo/$fork/REVERIE.patch"
expect "no REVERIE.patch" "no REVERIE.patch"

fresh
mkdir -p "$work/repo/third_party/other"
echo 'replace example.com/other v1.0.0 => ./third_party/other' >>"$work/repo/go.mod"
expect "a replace into third_party without REVERIE.md" "go.mod replaces example.com/other with ./third_party/other, which has no REVERIE.md"

echo "forkcheck_test: $passed passed, $failed failed"
[ "$failed" = 0 ]
