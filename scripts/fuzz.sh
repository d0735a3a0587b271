#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make fuzz / fuzz-report / fuzz-minimize: libFuzzer campaigns that add up across runs.
#
#   scripts/fuzz.sh run BUILD_DIR SECONDS [TARGET...]
#       fuzzes each target (default: every fuzz_* in BUILD_DIR/bin) for SECONDS over its
#       campaign corpus (STATE/corpus/<target>, kept between runs) and the committed one (read
#       only); appends one line per run to STATE/log.tsv: start (UTC), target, wall s, CPU s
#       (user + system of the fuzzer and its threads), executions, campaign corpus files, cov,
#       ft (libFuzzer's edge and feature counts at the end), exit status. Reproducers of
#       crashes, leaks and timeouts go to STATE/artifacts/<target>/.
#   scripts/fuzz.sh report BUILD_DIR
#       sums the log per target: runs, CPU hours, executions, the last corpus, cov and ft.
#   scripts/fuzz.sh minimize BUILD_DIR TARGET...
#       adds to the committed corpus tests/fuzz/corpus/<target> the smallest set of campaign
#       inputs that reaches the coverage the committed ones miss (libFuzzer -merge=1); the
#       committed inputs (named seeds, regression-* reproducers of fixed findings) all stay.
# STATE is $FUZZ_STATE (default BUILD_DIR/fuzz-campaign). FUZZ_NICE=N runs the fuzzers at nice N
# (a campaign on a machine that also builds). Exits non-zero when a run ended on a finding.
set -euo pipefail
usage() {
  sed -n '2,/^set -euo/p' "$0" |
    sed -e '$d' -e '/^# SPDX-License-Identifier:/d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
[[ $# -ge 2 ]] || usage
mode=$1 build=$(cd "$2" && pwd)
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
state=${FUZZ_STATE:-$build/fuzz-campaign}
mkdir -p "$state"
log=$state/log.tsv

targets_or_all() {
  if [[ $# -gt 0 ]]; then printf '%s\n' "$@"; return; fi
  local bin
  for bin in "$build"/bin/fuzz_*; do [[ -x $bin ]] && echo "${bin##*/fuzz_}"; done
}

# The last status line of a libFuzzer log ("#N ... cov: C ft: F corp: ..."): "C F".
coverage_of() {
  grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$1" | tail -1 |
    sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 \2/' || true
}

run_one() {
  local name=$1 seconds=$2 bin=$build/bin/fuzz_$1
  [[ -x $bin ]] || { echo "fuzz: $bin not built (make fuzz-build)" >&2; return 1; }
  local committed=$here/tests/fuzz/corpus/$name
  [[ -d $committed ]] || { echo "fuzz: committed corpus $committed missing" >&2; return 1; }
  mkdir -p "$state/corpus/$name" "$state/artifacts/$name" "$state/logs"
  local started out status times wall user system
  started=$(date -u +%FT%TZ)
  out=$state/logs/$name.$(date -u +%Y%m%dT%H%M%S).log
  echo "==> fuzz_$name for ${seconds}s (log $out)"
  local TIMEFORMAT='%R %U %S'
  # bash's `time` reports the fuzzer's own CPU time, all its threads, whatever the machine's load.
  times=$({ time nice -n "${FUZZ_NICE:-0}" "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$state/artifacts/$name/" "$state/corpus/$name" "$committed" \
    >"$out" 2>&1; } 2>&1) && status=0 || status=$?
  # `time` prints its line last; when the fuzzer fails, `status` is the fuzzer's exit status.
  read -r wall user system <<<"$(tail -1 <<<"$times")"
  local execs cov ft corpus
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$out" | tail -1)
  read -r cov ft <<<"$(coverage_of "$out")"
  corpus=$(find "$state/corpus/$name" -type f | wc -l)
  local cpu
  cpu=$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.1f", u + s }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$started" "$name" "$wall" "$cpu" "${execs:-0}" "$corpus" \
    "${cov:-}" "${ft:-}" "$status" >>"$log"
  echo "    ${wall}s wall, ${cpu}s CPU, ${execs:-0} executions, corpus $corpus, cov ${cov:-?} ft ${ft:-?}, exit $status"
  if [[ $status -ne 0 ]]; then
    echo "fuzz: fuzz_$name ended on a finding (exit $status): $out, reproducers in $state/artifacts/$name" >&2
    return 1
  fi
}

case $mode in
  run)
    [[ $# -ge 1 ]] || usage
    seconds=$1
    shift
    result=0
    while read -r name; do run_one "$name" "$seconds" || result=1; done < <(targets_or_all "$@")
    exit $result
    ;;
  report)
    [[ -f $log ]] || { echo "fuzz: no campaign log at $log" >&2; exit 1; }
    awk -F'\t' '
      { runs[$2]++; cpu[$2] += $4; execs[$2] += $5; corpus[$2] = $6; if ($7 != "") { cov[$2] = $7; ft[$2] = $8 }
        if ($9 != 0) findings[$2]++; if (!($2 in first)) first[$2] = $1; last[$2] = $1 }
      END {
        for (t in runs)
          printf "%-16s %5d %9.2f %12d %7d %6s %7s %9d  %s .. %s\n", t, runs[t], cpu[t] / 3600, execs[t], corpus[t], cov[t], ft[t], findings[t], first[t], last[t]
      }' "$log" | sort | sed "1i $(printf '%-16s %5s %9s %12s %7s %6s %7s %9s  %s' target runs 'CPU h' executions corpus cov ft findings 'first .. last run')"
    ;;
  minimize)
    [[ $# -ge 1 ]] || usage
    for name in "$@"; do
      bin=$build/bin/fuzz_$name committed=$here/tests/fuzz/corpus/$name
      [[ -x $bin && -d $committed ]] || { echo "fuzz: $bin or $committed missing" >&2; exit 1; }
      mkdir -p "$state/corpus/$name"
      # The committed inputs (named seeds, regression-* reproducers) all stay; the merge adds
      # only campaign inputs that reach coverage they do not.
      merged=$(mktemp -d "$state/merge.$name.XXXXXX")
      cp -p "$committed"/. "$merged"/ -r
      before=$(find "$committed" -type f | wc -l)
      if ! "$bin" -merge=1 -timeout=10 -rss_limit_mb=2048 "$merged" "$state/corpus/$name" \
        >"$state/merge.$name.log" 2>&1; then
        rm -rf "$merged"
        echo "fuzz: merge of $name failed, see $state/merge.$name.log" >&2
        exit 1
      fi
      cp -pn "$merged"/* "$committed"/
      rm -rf "$merged"
      echo "$name: committed corpus $before -> $(find "$committed" -type f | wc -l) inputs"
    done
    ;;
  *) usage ;;
esac
