#!/usr/bin/env bash
# Builds the Ory Hydra binary the OpenID Connect test runs, once, into a
# cache outside the repo, and prints its path. Hydra comes from the Go
# module proxy, pinned as a tool in tools/hydra (a module of its own, so
# its dependencies stay out of the mesh's go.mod). Its in-memory database
# is SQLite: the build needs CGO and a C compiler. A cold build takes about
# five minutes on 2 cores; later runs reuse the binary.
set -euo pipefail
version=v2.3.0
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${A2AMESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/a2amesh}"
bin="$cache/hydra-$version/hydra"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$cache/hydra-$version"
work=$(mktemp -d "$cache/hydra-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root/tools/hydra" && go mod download && CGO_ENABLED=1 go build -tags sqlite,sqlite_omit_load_extension \
  -ldflags "-X github.com/ory/hydra/v2/driver/config.Version=$version" -o "$work/hydra" github.com/ory/hydra/v2) >&2
mv "$work/hydra" "$bin"
echo "$bin"
