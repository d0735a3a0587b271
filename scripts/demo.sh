#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make demo: the whole stack end to end on an emulated device.
#   1. start qaic-emu on a temporary root, and qaicd on it
#   2. compile examples/smallcnn with qaic-exec
#   3. make four IO sets of inputs and their expected outputs (host executor, lightnet)
#   4. run them through qaic-runner with a batch JSON and -c, on the whole device
#   5. again inside a partition qaicd sized for the container (qaic-util create -- ...)
#   6. print qaic-util -q, then shut everything down, also when a step fails
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
python=/usr/bin/python3   # Debian's, with numpy
work=$(mktemp -d /tmp/qaic-demo.XXXXXX)
root=$work/root
emu_pid=""
qaicd_pid=""

step() { printf '\n==> %s\n' "$*"; }

cleanup() {
  local rc=$?
  set +e
  if [[ -n $qaicd_pid ]] && kill -0 "$qaicd_pid" 2>/dev/null; then
    kill -TERM "$qaicd_pid"
    for _ in $(seq 50); do kill -0 "$qaicd_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  if [[ -n $emu_pid ]] && kill -0 "$emu_pid" 2>/dev/null; then
    kill -TERM "$emu_pid"
    for _ in $(seq 50); do kill -0 "$emu_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$emu_pid" 2>/dev/null
  fi
  if mountpoint -q "$root" 2>/dev/null; then
    fusermount3 -u "$root" 2>/dev/null || umount -l "$root" 2>/dev/null
  fi
  if mountpoint -q "$root" 2>/dev/null; then
    echo "demo: $root is still mounted" >&2
    rc=1
  else
    rm -rf "$work"
  fi
  if ((rc == 0)); then echo; echo "demo: finished; emulator stopped and unmounted"; else echo "demo: FAILED (exit $rc)" >&2; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in qaic-emu qaicd qaic-exec qaic-runner qaic-util lightnet; do
  [[ -x $bin/$tool ]] || { echo "demo: $bin/$tool is missing; run make first" >&2; exit 1; }
done

step "Starting the emulated device: qaic-emu --root $root --daemon"
mkdir -p "$root"
"$bin/qaic-emu" --root "$root" --daemon
export QAIC_ROOT=$root
emu_pid=$(cat "$root/sys/class/accel/accel0/qaic-emu/pid")
echo "qaic-emu running as pid $emu_pid; devices: $(ls "$root/dev/accel" | tr '\n' ' ')"

step "Starting qaicd: qaicd --root $root --socket $work/qaicd.sock --daemon"
qaicd_pid=$("$bin/qaicd" --root "$root" --socket "$work/qaicd.sock" --daemon)
export QAICD_SOCKET=$work/qaicd.sock
echo "qaicd running as pid $qaicd_pid"

step "Compiling examples/smallcnn/smallcnn.json"
"$bin/qaic-exec" -m="$here/examples/smallcnn/smallcnn.json" -aic-binary-dir="$work/smallcnn"
"$bin/qaic-util" --qpc "$work/smallcnn"

step "Making 4 IO sets and their expected outputs with the host executor"
mkdir -p "$work/io"
"$python" - "$work/io" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(7)
for i in range(4):
    # Values exact in float16, so the device's FP16 input format loses nothing.
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float16).astype(np.float32)
    x.tofile(f"{sys.argv[1]}/image{i}.raw")
PY
for i in 0 1 2 3; do
  "$bin/lightnet" -o '!' --input "image=$work/io/image$i.raw" --output-dir "$work/io/ref$i" \
    "$here/examples/smallcnn/smallcnn.json" > /dev/null
done
{
  echo '{"IO-files": ['
  for i in 0 1 2 3; do
    sep=$([[ $i -lt 3 ]] && echo , || true)
    echo "  [ {\"path\":\"image$i.raw\", \"data-type\":\"float\", \"io-direction\":\"in\", \"map-to\":\"image\"},"
    echo "    {\"path\":\"ref$i/probs.raw\", \"data-type\":\"float\", \"io-direction\":\"out\", \"map-to\":\"probs\"} ]$sep"
  done
  echo ']}'
} > "$work/io/batch.json"
cat "$work/io/batch.json"

step "qaic-runner -t $work/smallcnn --aic-batch-json-input batch.json -n 400 -c"
"$bin/qaic-runner" -t "$work/smallcnn" --aic-batch-json-input "$work/io/batch.json" -n 400 -c

step "The same inside a partition: qaic-util create --qpc smallcnn -- qaic-runner -d \$QAIC_PARTITION"
# qaicd sizes the partition from the container; it lives as long as the command.
"$bin/qaic-util" create --qpc "$work/smallcnn" --label demo -- \
  bash -c '"$1" -q -d "$QAIC_PARTITION" && "$2" -t "$3" --aic-batch-json-input "$4" -n 100 -c -d "$QAIC_PARTITION"' \
  demo "$bin/qaic-util" "$bin/qaic-runner" "$work/smallcnn" "$work/io/batch.json"

step "qaic-util -q (the partition went with its command)"
"$bin/qaic-util" -q
