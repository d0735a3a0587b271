#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench, "Pipeline": the throughput of a network cut into 2 pipeline stages on 2 emulated
cards (qaic-exec -mdp-pipeline-stages=2, one NSP each) with 2 activations, against the same
network on one card with one NSP and one activation, both through qaic-runner on one qaic-emu
started here. The network is an MLP of 8 float matmuls of 512 x 512 over a [64, 512] input, so
the two stages hold equal weights and equal work and each inference sends one [64, 512] tensor
between the cards. Prints the ratio with 2 activations and with 1 (goal >= 1.6x where the host
has a core for each stage of each activation), the one-card figure with 2 activations (the same
cores without pipelining), and the CPU.

Usage: scripts/bench-pipeline.py BUILD_DIR [--rounds R] [--inferences N]
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(__file__).resolve().parents[1]
STATS = re.compile(r"^InferenceCnt (\d+) TotalDuration (\d+)us BatchSize (\d+) Inf/Sec ([\d.]+)$", re.M)
LAYERS, WIDTH, ROWS = 8, 512, 64


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} CPUs"
    return f"{os.cpu_count()} CPUs"


def write_mlp(path):
    import numpy
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    random = numpy.random.default_rng(7)
    nodes, weights = [], []
    previous = "x"
    for layer in range(LAYERS):
        weight = f"w{layer}"
        weights.append(numpy_helper.from_array(
            (random.standard_normal((WIDTH, WIDTH)) / WIDTH ** 0.5).astype(numpy.float32), weight))
        out = "y" if layer == LAYERS - 1 else f"a{layer}"
        nodes.append(helper.make_node("MatMul", [previous, weight], [f"h{layer}"], name=f"mm{layer}"))
        nodes.append(helper.make_node("Relu", [f"h{layer}"], [out], name=f"act{layer}"))
        previous = out
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, WIDTH])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [ROWS, WIDTH])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def rate(command, env):
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    match = STATS.search(out)
    if not match:
        raise SystemExit(f"no statistics line in the output of {command}:\n{out}")
    return float(match.group(4))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inferences", type=int, default=200)
    args = parser.parse_args()
    build = args.build.resolve()
    sys.path.insert(0, str(SOURCE / "tests/support"))
    from qaic_processes import Emulator, run

    work = pathlib.Path(tempfile.mkdtemp(prefix="qaic-bench-pipeline."))
    model = work / "mlp.onnx"
    write_mlp(model)
    one, staged = work / "one", work / "staged"
    run([build / "bin/qaic-exec", f"-m={model}", "-aic-num-cores=1", f"-aic-binary-dir={one}"])
    run([build / "bin/qaic-exec", f"-m={model}", "-aic-num-cores=1", "-mdp-pipeline-stages=2",
         f"-aic-binary-dir={staged}"])
    emulator = Emulator(build / "bin/qaic-emu", devices=2)
    try:
        env = emulator.env()
        n = str(args.inferences)
        single, single2, piped, piped1 = [], [], [], []
        for _ in range(args.rounds):  # alternating, so every figure sees the same load
            single.append(rate([build / "bin/qaic-runner", "-t", one, "-n", n, "-a", "1", "-d", "0"], env))
            single2.append(rate([build / "bin/qaic-runner", "-t", one, "-n", n, "-a", "2", "-d", "0"], env))
            piped.append(rate([build / "bin/qaic-runner", "-t", staged, "-n", n, "-a", "2", "-d", "0", "-d", "1"],
                              env))
            piped1.append(rate([build / "bin/qaic-runner", "-t", staged, "-n", n, "-a", "1", "-d", "0", "-d", "1"],
                               env))
        s, s2 = statistics.median(single), statistics.median(single2)
        p, p1 = statistics.median(piped), statistics.median(piped1)
        cpus = os.cpu_count() or 1
        print(f"CPU: {cpu_name()}")
        # Each stage of each activation is a program with an NSP's thread of its own: 2 stages with
        # 2 activations need 4 cores, 2 stages with 1 activation (qaic-runner keeps its set of 10
        # inferences in flight through both) need 2.
        for label, rate_, programs in (("2 activations", p, 4), ("1 activation", p1, 2)):
            if cpus >= programs:
                verdict = "meets" if rate_ / s >= 1.6 else "MISSES"
                verdict += " the >= 1.6x goal"
            else:
                verdict = f"the goal needs {programs} cores, this host has {cpus}"
            print(f"2 pipeline stages, {label} / one card, 1 activation, MLP {LAYERS} x {WIDTH}x{WIDTH} over "
                  f"[{ROWS}, {WIDTH}], 1 NSP per card: {rate_:,.1f} / {s:,.1f} Inf/Sec = {rate_ / s:.2f}x ({verdict}; "
                  f"medians of {args.rounds} alternating runs of {n})")
        print(f"one card, 2 activations (the same cores without pipelining): {s2:,.1f} Inf/Sec = "
              f"{s2 / s:.2f}x one activation")
    finally:
        emulator.stop()


if __name__ == "__main__":
    main()
