#!/usr/bin/env bash
# make demo: compile the sample network and show what the container holds.
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
work=$(mktemp -d /tmp/qaic-demo.XXXXXX)

cleanup() {
  local rc=$?
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT INT TERM

step() { printf '\n==> %s\n' "$*"; }

step "Compiling examples/smallcnn/smallcnn.json"
"$bin/qaic-exec" -m="$here/examples/smallcnn/smallcnn.json" -aic-binary-dir="$work/smallcnn"

step "Container summary (qaic-util --qpc)"
"$bin/qaic-util" --qpc "$work/smallcnn"
