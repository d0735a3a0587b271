#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# An example CI job on a machine where the qaic-stack packages are installed (docs/ci.md): start
# emulated devices, compile a network, run it with qaic-runner and from Python, stop the devices.
# Your job replaces the compile and run lines with its own tests; the environment is the same.
#   qaic-ci-job.sh NETWORK INPUT_NAME INPUT_SHAPE
# NETWORK is an ONNX model or a JSON IR network; INPUT_NAME and INPUT_SHAPE (e.g. 1,3,16,16)
# describe one float32 input, which the Python step fills with zeros.
set -eu
network=${1:?network file}
input_name=${2:?input name}
input_shape=${3:?input shape, e.g. 1,3,224,224}

# Where the emulator serves its device files and sysfs tree; libqaic, the tools and the Python
# module find the devices through QAIC_ROOT (unset, they use the real /dev and /sys).
export QAIC_ROOT="${QAIC_ROOT:-/run/qaic-emu}"
work=$(mktemp -d)

# --daemon returns once the devices answer. Unmounting the tree stops the emulator.
qaic-emu --root "$QAIC_ROOT" --config /etc/qaic-emu/default.json --daemon
trap 'umount "$QAIC_ROOT" 2>/dev/null || fusermount3 -u "$QAIC_ROOT"; rm -rf "$work"' EXIT
qaic-util -q

qaic-exec -m="$network" -aic-binary-dir="$work/qpc"
qaic-runner -t "$work/qpc" -n 100

/usr/bin/python3 - "$network" "$input_name" "$input_shape" "$work/cache" <<'PYTHON'
import sys

import numpy
import qaic

network, name, shape, cache = sys.argv[1:]
session = qaic.Session(network, cache_dir=cache)
outputs = session.run({name: numpy.zeros([int(d) for d in shape.split(",")], numpy.float32)})
for output, value in outputs.items():
    print(f"qaic.Session: {output} {value.shape} {value.dtype}")
PYTHON
