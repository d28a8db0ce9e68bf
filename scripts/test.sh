#!/usr/bin/env bash
# The test suite: every package with the race detector. The README names
# this command; .ci/run calls it after installing dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -race -count=1 -timeout 15m ./... "$@"
