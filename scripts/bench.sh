#!/usr/bin/env bash
# make bench: every benchmark, each reported as a ratio to a baseline measured in the same run.
#   device-format conversion vs memcpy      (scripts/bench-kernels.sh; goal >= 0.5x)
#   ResNet-18 / MobileNetV2 host vs PyTorch  (scripts/bench-models.sh; goal <= 1.0x latency)
#   emulator ioctl and ring round trips      (build/bin/emu_bench)
#   runtime latency and throughput           (build/bin/qaic_runtime_bench)
# Usage: scripts/bench.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
threads=$(nproc)
export QAIC_BUILD_DIR=$build   # benchmarks start build/bin/qaic-emu and qaic-exec

section() { printf '\n==== %s ====\n' "$*"; }

section "Device-format conversion vs memcpy"
"$here/scripts/bench-kernels.sh" "$build"

section "Models on the host executor vs PyTorch ($threads threads)"
"$here/scripts/bench-models.sh" "$build" "$threads"

for program in bin/emu_bench bin/qaic_runtime_bench; do
  section "${program##*/}"
  [[ -x $build/$program ]] || { echo "bench: $build/$program was not built" >&2; exit 1; }
  log=$(mktemp)
  "$build/$program" --benchmark_min_time="${BENCH_MIN_TIME:-0.5}" | tee "$log"
  if grep -q "ERROR OCCURRED" "$log"; then rm -f "$log"; echo "bench: $program reported an error" >&2; exit 1; fi
  rm -f "$log"
done
