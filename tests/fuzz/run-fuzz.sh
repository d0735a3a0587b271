#!/usr/bin/env bash
# run-fuzz.sh BINARY CORPUS_DIR WORK_DIR SECONDS
# Replays the committed corpus, then fuzzes for SECONDS. Fails on any crash, leak or timeout,
# and fails loudly when the binary is missing (a fuzz build that did not happen is not a pass).
set -euo pipefail
bin=$1 corpus=$2 work=$3 seconds=$4
[[ -x $bin ]] || { echo "run-fuzz: $bin not built (make fuzz-build)" >&2; exit 1; }
[[ -d $corpus ]] || { echo "run-fuzz: corpus $corpus missing" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work/new" "$work/artifacts"
exec "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/new" "$corpus"
