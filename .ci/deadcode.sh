#!/usr/bin/env bash
# Fails when deadcode finds an unreachable function outside the test kits that
# .ci/deadcode.allow does not list (see the comment at its top).
set -euo pipefail
cd "$(dirname "$0")/.."
module=$(go list -m)
found=$(go run golang.org/x/tools/cmd/deadcode@v0.52.0 \
  -f '{{range .Funcs}}{{$.Path}} {{.Name}}{{"\n"}}{{end}}' ./... |
  sed "s|^$module/||; s|^$module |. |" |
  grep -v -E '^([a-z0-9_/]*test|internal/fulldisk) ' | sort -u)
allowed=$(grep -v -E '^(#|$)' .ci/deadcode.allow | sort -u)
new=$(comm -23 <(echo "$found") <(echo "$allowed") | grep -v '^$' || true)
if [ -n "$new" ]; then
  echo "unreachable functions (delete them, or list them in .ci/deadcode.allow with the reason):"
  echo "$new"
  exit 1
fi
echo "deadcode: $(echo "$found" | grep -c . || true) unreachable functions, all listed in .ci/deadcode.allow"
