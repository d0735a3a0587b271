#!/bin/sh
# Device-format conversion throughput as a ratio to memcpy of the same bytes, measured in the
# same run. Usage: scripts/bench-kernels.sh [BUILD_DIR] (default build). Goal: ratio >= 0.5 for
# the product path (ConversionPath::Auto, the F16C/AVX2 kernels on this machine). The Scalar rows
# are the fallback for CPUs without F16C/AVX2; they are printed in a separate reference block,
# without the goal flag, so that they are visible but not read as the product's throughput. The
# rows forcing one vector kernel family (ConversionPath::Avx2 / Avx512) are printed in a third
# block: the A/B behind Auto's choice between AVX2 and AVX-512 kernels.
# Every benchmark, memcpy included, runs BENCH_REPETITIONS times (default 3), the repetitions of
# all benchmarks in random order, and the medians are compared: on a shared machine a burst of
# load then falls on memcpy and the conversions alike instead of deciding a row.
set -eu
build=${1:-build}
bench="$build/bin/bench_device_format"
if [ ! -x "$bench" ]; then
  echo "error: $bench not found; build it first (make)" >&2
  exit 1
fi
out=$(mktemp /tmp/bench-kernels.XXXXXX.json)
trap 'rm -f "$out"' EXIT
"$bench" --benchmark_min_time="${BENCH_MIN_TIME:-0.5}" --benchmark_repetitions="${BENCH_REPETITIONS:-3}" \
  --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out" --benchmark_out_format=json >/dev/null 2>&1
/usr/bin/python3 - "$out" <<'PY'
import json, re, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
split = re.compile(r"^(.*?)((?:/\d+)+)$")
memcpy, rows = {}, []
repeated = any(r.get("run_type") == "aggregate" for r in runs)
for r in runs:
    if repeated and r.get("aggregate_name") != "median":
        continue
    m = split.match(r.get("run_name", r["name"]))
    if not m or "bytes_per_second" not in r:
        continue
    name, args = m.groups()
    if name == "BM_Memcpy":
        memcpy[args] = r["bytes_per_second"]
    else:
        order = (r.get("family_index", 0), r.get("per_family_instance_index", 0))
        rows.append((order, name, args, r["bytes_per_second"]))
rows = [row[1:] for row in sorted(rows, key=lambda row: row[0])]  # registration order, not run order
fallback = lambda name: "ConversionPath::Scalar" in name
forced = lambda name: "ConversionPath::Avx2>" in name or "ConversionPath::Avx512>" in name
header = f"{'conversion':<72} {'N/C/H/W':<16} {'GB/s':>7} {'memcpy':>7} {'ratio':>6}"

def table(selected, goal):
    print(header)
    for name, args, bps in selected:
        base = memcpy.get(args)
        if not base:
            continue
        ratio = bps / base
        flag = "  (below 0.5 goal)" if goal and ratio < 0.5 else ""
        print(f"{name:<72} {args[1:]:<16} {bps/1e9:7.2f} {base/1e9:7.2f} {ratio:6.2f}{flag}")

print("product path (goal: ratio >= 0.5)")
table([r for r in rows if not fallback(r[0]) and not forced(r[0])], goal=True)
reference = [r for r in rows if fallback(r[0])]
if reference:
    print()
    print("reference: scalar fallback (not the product path)")
    table(reference, goal=False)
families = [r for r in rows if forced(r[0])]
if families:
    print()
    print("reference: one vector kernel family forced (A/B of what Auto picks)")
    table(families, goal=False)
PY
