#!/bin/sh
# ResNet-18 and MobileNetV2, batch 1: host-executor latency against PyTorch's at the same thread
# count, measured in the same run and printed as a ratio (host / PyTorch; < 1 means faster).
# Usage: scripts/bench-models.sh [BUILD_DIR] [THREADS]
set -eu
BUILD=${1:-build}
THREADS=${2:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODELS="$BUILD/tests/conformance/models"
BENCH="$BUILD/bin/onnx_model_bench"

[ -x "$BENCH" ] || { echo "error: $BENCH not built (make)" >&2; exit 1; }
/usr/bin/python3 "$ROOT/scripts/gen-models.py" "$MODELS"

HOST_JSON=$(mktemp)
TORCH_JSON=$(mktemp)
trap 'rm -f "$HOST_JSON" "$TORCH_JSON"' EXIT
QAIC_MODEL_DIR="$MODELS" QAIC_BENCH_THREADS="$THREADS" OMP_NUM_THREADS="$THREADS" \
  "$BENCH" --benchmark_format=json --benchmark_out="$HOST_JSON" --benchmark_out_format=json >/dev/null
/usr/bin/python3 "$ROOT/scripts/gen-models.py" "$MODELS" --torch-latency --threads "$THREADS" >"$TORCH_JSON"

/usr/bin/python3 - "$HOST_JSON" "$TORCH_JSON" "$THREADS" <<'PY'
import json, sys
host = {b["name"].split("/")[0]: b for b in json.load(open(sys.argv[1]))["benchmarks"]}
torch = json.load(open(sys.argv[2]))
print(f"batch-1 latency, {sys.argv[3]} thread(s)")
print(f"{'model':<14}{'host ms':>10}{'torch ms':>10}{'host/torch':>12}")
for bench, model in (("BM_ResNet18", "resnet18"), ("BM_MobileNetV2", "mobilenet_v2")):
    b = host.get(bench)
    if b is None or b.get("error_occurred"):
        print(f"{model:<14} host benchmark failed: {b.get('error_message') if b else 'missing'}")
        continue
    scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
    host_ms = b["real_time"] * scale
    torch_ms = torch[model] * 1e3
    print(f"{model:<14}{host_ms:>10.2f}{torch_ms:>10.2f}{host_ms / torch_ms:>12.2f}")
PY
