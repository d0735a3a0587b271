#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Device-format conversion throughput as a ratio to memcpy of the same bytes, measured in the
# same run. Usage: scripts/bench-kernels.sh [BUILD_DIR] (default build). Goal: ratio >= 0.8 for
# the product path (ConversionPath::Auto: the AVX-512 or F16C/AVX2 kernels, as Auto picks them
# per shape), and Auto not slower than a forced kernel family beyond the noise. The Scalar rows
# are the fallback for CPUs without F16C/AVX2; they are printed in a separate reference block,
# without the goal flag, so that they are visible but not read as the product's throughput. The
# rows forcing one vector kernel family (ConversionPath::Avx2 / Avx512) are printed in a third
# block: the A/B behind Auto's choice between AVX2 and AVX-512 kernels, with the spread of its
# repetitions. An Auto row whose every repetition is slower than every repetition of a forced
# family's row is flagged as slower than it beyond the noise (with five interleaved repetitions
# each, two rows of one speed come out that way with probability 1/252).
# A fourth block shows the ceiling rows (DeviceFormatCopyCeiling.cpp): the same user bytes moved
# in one sequential stream each way with the kernels' own instructions, no transpose. A
# conversion cannot beat its ceiling row's ratio on the same shape (Copy for postprocess,
# ToFloat16 for preprocess into float16).
# Every benchmark, memcpy included, runs BENCH_REPETITIONS times (default 5), the repetitions of
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
"$bench" --benchmark_min_time="${BENCH_MIN_TIME:-0.5}" --benchmark_repetitions="${BENCH_REPETITIONS:-5}" \
  --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out" --benchmark_out_format=json >/dev/null 2>&1
/usr/bin/python3 - "$out" <<'PY'
import json, re, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
GOAL = 0.8  # issue 25: every product row at 0.8 of memcpy or above
split = re.compile(r"^(.*?)((?:/\d+)+)$")
memcpy, rows, spread = {}, [], {}
repeated = any(r.get("run_type") == "aggregate" for r in runs)
for r in runs:
    m = split.match(r.get("run_name", r["name"]))
    if not m or "bytes_per_second" not in r:
        continue
    name, args = m.groups()
    if r.get("run_type") == "iteration":
        spread.setdefault((name, args), []).append(r["bytes_per_second"])
    if repeated and r.get("aggregate_name") != "median":
        continue
    if name == "BM_Memcpy":
        memcpy[args] = r["bytes_per_second"]
    else:
        order = (r.get("family_index", 0), r.get("per_family_instance_index", 0))
        rows.append((order, name, args, r["bytes_per_second"]))
rows = [row[1:] for row in sorted(rows, key=lambda row: row[0])]  # registration order, not run order
fallback = lambda name: "ConversionPath::Scalar" in name
forced = lambda name: "ConversionPath::Avx2>" in name or "ConversionPath::Avx512>" in name
ceiling = lambda name: name.startswith("BM_Ceiling<")
header = f"{'conversion':<72} {'N/C/H/W':<16} {'GB/s':>7} {'memcpy':>7} {'ratio':>6}"

def slower_than_forced(name, args):
    """The forced families whose every repetition beat every repetition of Auto on this row."""
    auto = spread.get((name, args), [])
    if "ConversionPath::Auto>" not in name or len(auto) < 2:
        return []
    beaten = []
    for family in ("Avx2", "Avx512"):
        runs_of = spread.get((name.replace("ConversionPath::Auto>", f"ConversionPath::{family}>"), args), [])
        if len(runs_of) > 1 and max(auto) < min(runs_of):
            beaten.append(family)
    return beaten

def table(selected, goal):
    print(header + ("  repetitions GB/s" if not goal else ""))
    for name, args, bps in selected:
        base = memcpy.get(args)
        if not base:
            continue
        ratio = bps / base
        flag = f"  (below {GOAL} goal)" if goal and ratio < GOAL else ""
        beaten = slower_than_forced(name, args)
        if goal and beaten:
            flag += f"  (slower than forced {', '.join(beaten)})"
        runs_of = spread.get((name, args), [])
        if not goal and len(runs_of) > 1:
            flag += f"  {min(runs_of)/1e9:.2f}-{max(runs_of)/1e9:.2f}"
        print(f"{name:<72} {args[1:]:<16} {bps/1e9:7.2f} {base/1e9:7.2f} {ratio:6.2f}{flag}")

print(f"product path (goal: ratio >= {GOAL})")
table([r for r in rows if not fallback(r[0]) and not forced(r[0]) and not ceiling(r[0])], goal=True)
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
ceilings = [r for r in rows if ceiling(r[0])]
if ceilings:
    print()
    print("reference: ceiling, the user bytes in one sequential stream each way with ordinary vector")
    print("loads and stores (Copy: a postprocess's traffic, ToFloat16: a preprocess's), no transpose")
    table(ceilings, goal=False)
PY
