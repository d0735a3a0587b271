#!/bin/sh
# Full-size networks, batch 1, in one run:
#   1. host-executor latency against PyTorch's on the same inputs at the same thread count (the
#      machine's threads, then 1): host / PyTorch, goal <= 1.0;
#   2. the same networks compiled by qaic-exec and run by qaic-runner on a real qaic-emu (one
#      inference at a time; an activation computes on one thread) against the host executor on
#      one thread: device / host, goal <= 1.1;
#   3. qaic-emu's peak RSS running ResNet-50 against 2x its weights plus its two largest
#      activations.
# Usage: scripts/bench-models.sh [BUILD_DIR] [THREADS]
set -eu
BUILD=$(cd "${1:-build}" && pwd)
THREADS=${2:-$(nproc)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODELS_DIR="$BUILD/tests/conformance/bench-models"
BENCH="$BUILD/bin/onnx_model_bench"
MODELS="resnet50_full mobilenet_v3_large_full convnext_tiny_full bert_base_full resnet18_full mobilenet_v2_full"

for tool in "$BENCH" "$BUILD/bin/qaic-exec" "$BUILD/bin/qaic-runner" "$BUILD/bin/qaic-emu"; do
  [ -x "$tool" ] || { echo "error: $tool not built (make)" >&2; exit 1; }
done
# shellcheck disable=SC2086
/usr/bin/python3 "$ROOT/scripts/gen-models.py" "$MODELS_DIR" --models $MODELS >/dev/null

WORK=$(mktemp -d /tmp/qaic-bench-models-XXXXXX)
EMU_PID=
cleanup() {
  if [ -n "$EMU_PID" ]; then kill "$EMU_PID" 2>/dev/null || true; sleep 0.5; fi
  fusermount3 -u "$WORK/root" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

for threads in "$THREADS" 1; do
  QAIC_MODEL_DIR="$MODELS_DIR" QAIC_BENCH_THREADS="$threads" OMP_NUM_THREADS="$threads" \
    "$BENCH" --benchmark_format=json --benchmark_out="$WORK/host-$threads.json" --benchmark_out_format=json >/dev/null
  # shellcheck disable=SC2086
  /usr/bin/python3 "$ROOT/scripts/gen-models.py" "$MODELS_DIR" --torch-latency --threads "$threads" \
    --models $MODELS >"$WORK/torch-$threads.json"
done

# Through the device: one qaic-emu; each model compiled, then 20 inferences one at a time.
mkdir -p "$WORK/root"
EMU_PID=$("$BUILD/bin/qaic-emu" --root "$WORK/root" --daemon)
export QAIC_ROOT="$WORK/root"
: >"$WORK/device.txt"
for model in $MODELS; do
  "$BUILD/bin/qaic-exec" -m="$MODELS_DIR/$model.onnx" -aic-binary-dir="$WORK/$model" >/dev/null
  inputs=
  for f in "$MODELS_DIR/$model".in*.bin; do inputs="$inputs -i $f"; done
  # shellcheck disable=SC2086
  "$BUILD/bin/qaic-runner" -t "$WORK/$model" $inputs -n 3 -S 1 -T 1 >/dev/null  # warm-up: activation, packing
  # shellcheck disable=SC2086
  line=$("$BUILD/bin/qaic-runner" -t "$WORK/$model" $inputs -n 20 -S 1 -T 1 | grep InferenceCnt)
  echo "$model $line" >>"$WORK/device.txt"
done
kill "$EMU_PID"; sleep 0.5; fusermount3 -u "$WORK/root" 2>/dev/null || true

# A fresh emulator for ResNet-50's peak RSS: load, activation, three inferences.
EMU_PID=$("$BUILD/bin/qaic-emu" --root "$WORK/root" --daemon)
"$BUILD/bin/qaic-runner" -t "$WORK/resnet50_full" -i "$MODELS_DIR/resnet50_full.in0.bin" -n 3 >/dev/null
peak_kb=$(awk '/VmHWM/ {print $2}' "/proc/$EMU_PID/status")
kill "$EMU_PID"; EMU_PID=

/usr/bin/python3 - "$WORK" "$THREADS" "$peak_kb" "$MODELS_DIR" <<'PY'
import json, os, re, sys
work, threads, peak_kb, models_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
names = {"BM_ResNet50": "resnet50_full", "BM_MobileNetV3Large": "mobilenet_v3_large_full",
         "BM_ConvNeXtTiny": "convnext_tiny_full", "BM_BertBase4Layers": "bert_base_full",
         "BM_ResNet18": "resnet18_full", "BM_MobileNetV2": "mobilenet_v2_full"}
goals = {"resnet50_full", "mobilenet_v3_large_full", "convnext_tiny_full", "bert_base_full"}

def host_ms(t):
    out = {}
    for b in json.load(open(f"{work}/host-{t}.json"))["benchmarks"]:
        model = names[b["name"].split("/")[0]]
        if b.get("error_occurred"):
            out[model] = None
            print(f"{model}: host benchmark failed: {b.get('error_message')}")
            continue
        out[model] = b["real_time"] * {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
    return out

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"CPU: {cpu}, {os.cpu_count()} threads; batch 1; host = kernels::HostProgram, device = qaic-runner on qaic-emu")
hosts = {}
for t in sorted({threads, 1}, reverse=True):
    host, torch = host_ms(t), json.load(open(f"{work}/torch-{t}.json"))
    hosts[t] = host
    print(f"\n{t} thread(s)                  host ms  torch ms  host/torch  goal")
    for model in names.values():
        if host.get(model) is None:
            continue
        ratio = host[model] / (torch[model] * 1e3)
        goal = ("meets" if ratio <= 1.0 else "MISSES") + " <= 1.0" if model in goals else ""
        print(f"  {model:<24}{host[model]:>9.2f}{torch[model] * 1e3:>10.2f}{ratio:>12.2f}  {goal}")

print("\nthrough the device (1 compute thread)   device ms  host ms (1 thread)  device/host  goal")
for line in open(f"{work}/device.txt"):
    model = line.split()[0]
    m = re.search(r"InferenceCnt (\d+) TotalDuration (\d+)us", line)
    if not m or hosts[1].get(model) is None:
        continue
    device = int(m.group(2)) / int(m.group(1)) / 1e3
    ratio = device / hosts[1][model]
    goal = ("meets" if ratio <= 1.1 else "MISSES") + " <= 1.1" if model in goals else ""
    print(f"  {model:<38}{device:>9.2f}{hosts[1][model]:>18.2f}{ratio:>13.2f}  {goal}")

weights = os.path.getsize(f"{models_dir}/resnet50_full.onnx") / 1e6
activations = 2 * 256 * 56 * 56 * 4 / 1e6  # the two largest: [1, 256, 56, 56] float
budget = 2 * weights + activations
verdict = "meets" if peak_kb / 1e3 <= budget else "MISSES"
print(f"\nqaic-emu peak RSS running ResNet-50: {peak_kb / 1e3:.1f} MB; 2 x {weights:.1f} MB weights + "
      f"{activations:.1f} MB activations = {budget:.1f} MB ({verdict})")
PY
