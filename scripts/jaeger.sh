#!/usr/bin/env bash
# Builds the Jaeger v2 binary the end-to-end trace test runs, once, into a
# cache outside the repo, and prints its path. Jaeger is not in Debian and
# `go install` refuses its module (it has a replace directive), but its
# source comes from the Go module proxy: the v1.76.0 tag of the module
# carries the v2 binary (cmd/jaeger). A cold build takes several minutes on
# 2 cores; later runs reuse the binary.
set -euo pipefail
version=v1.76.0
cache="${A2AMESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/a2amesh}"
bin="$cache/jaeger-$version/jaeger"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/jaeger-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
dir=$(go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { echo "jaeger.sh: go mod download gave no directory" >&2; exit 1; }
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
(cd "$work/src" && CGO_ENABLED=0 go build -trimpath -o "$work/jaeger" ./cmd/jaeger) >&2
mkdir -p "$(dirname "$bin")"
mv "$work/jaeger" "$bin"
echo "$bin"
