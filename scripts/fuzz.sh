#!/usr/bin/env bash
# make fuzz: every libFuzzer target for SECONDS over its committed corpus; new inputs go to
# build-fuzz/corpus-new/<target>, reproducers of crashes to build-fuzz/artifacts/<target>.
# Usage: scripts/fuzz.sh FUZZ_BUILD_DIR SECONDS
set -euo pipefail
build=$(cd "${1:-build-fuzz}" && pwd)
seconds=${2:-300}
here=$(cd "$(dirname "$0")/.." && pwd)
status=0
for bin in "$build"/bin/fuzz_*; do
  name=${bin##*/fuzz_}
  echo "==> fuzz_$name for ${seconds}s"
  "$here/tests/fuzz/run-fuzz.sh" "$bin" "$here/tests/fuzz/corpus/$name" "$build/fuzz-work/$name" "$seconds" || status=1
done
exit $status
