#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""make bench, Python: qaic.Session against the C++ runtime and qaic-runner, in the same run.

  bench-python.py BUILD_DIR [--blocks N]

  1. Session.run on a tiny program (relu over 16 floats, the program of qaic_runtime_bench's
     TinySyncRoundTrip) against the C++ synchronous round trip (the same calls as that benchmark,
     build/bin/qaic_sync_round_trip_peer), in alternating blocks of 200 (a burst of load falls
     on both sides alike; tests/bench/support/AlternatingBlocks.hpp), medians of the block means
     compared; every thread of both clients and of the emulator on one CPU, as the runtime's own
     round-trip goal is measured (on two vCPUs a wake-up's cost depends on whether the other vCPU
     was halted, not on the code; docs/runtime.md). Goal: at most 1.5x.
  2. One round trip of the vendor's lower-level API (ExecObj.setData, Queue.enqueue,
     waitForCompletion, getData, read-only output placeholder) against InferenceSet's Python round
     trip (getAvailable, setBuffers, submit, waitForCompletion, putCompleted) on the same tiny
     program and CPU, in alternating blocks of 200, medians compared. Goal: at most 1.3x.
  3. Session.run_benchmark's Inf/Sec against qaic-runner's on the same program and settings
     (-n, -S set size, -a activations), for the tiny program and examples/smallcnn, on all CPUs,
     in 7 alternating runs, medians compared. Goal: at least 0.8x.

Both sides use the same qaic-emu, started here. Prints one line per comparison and the CPU.
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = pathlib.Path(__file__).resolve().parents[1]
TINY = {"ops": [{"name": "relu", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "x"}],
                 "tensors_out": [{"arg_name": "dst", "name": "y"}], "params": []}],
        "io": [{"name": "x", "tensor": "x", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, 16]},
               {"name": "y", "tensor": "y", "direction": "out", "dtype": "TL_FLOAT", "dims": [1, 16]}]}
STATS = re.compile(r"^InferenceCnt (\d+) TotalDuration (\d+)us BatchSize (\d+) Inf/Sec ([\d.]+)$", re.M)
BENCHMARK = """
import sys, qaic
session = qaic.Session(sys.argv[1], set_size=int(sys.argv[3]), num_activations=int(sys.argv[4]))
session.run_benchmark(num_inferences=200)
session.run_benchmark(num_inferences=int(sys.argv[2]))
"""


def cpu_name():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} CPUs"
    return f"{os.cpu_count()} CPUs"


def verdict(ok):
    return "meets" if ok else "MISSES"


def alternate(first, second, blocks, block_size):
    """Block means of two measurements taken in turn after one warm-up block each, so that the
    machine's drift falls on both alike: (first's list, second's list)."""
    first(1000), second(1000)
    a, b = [], []
    for _ in range(blocks):
        a.append(first(block_size))
        b.append(second(block_size))
    return a, b


def round_trips(build, qpc, blocks, block_size=200):
    """Block means (microseconds) of Session.run and of the C++ peer, alternating."""
    import numpy as np
    import qaic
    session = qaic.Session(qpc, set_size=1)
    inputs = {"x": np.full((1, 16), -1.0, np.float32)}
    peer = subprocess.Popen([build / "bin/qaic_sync_round_trip_peer", qpc], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        def cpp_block(n):
            peer.stdin.write(f"{n}\n")
            peer.stdin.flush()
            line = peer.stdout.readline()
            if not line:
                raise RuntimeError("qaic_sync_round_trip_peer stopped")
            return float(line) / 1e3

        def python_block(n):
            start = time.perf_counter()
            for _ in range(n):
                session.run(inputs)
            return (time.perf_counter() - start) / n * 1e6

        return alternate(cpp_block, python_block, blocks, block_size)
    finally:
        peer.stdin.close()
        peer.wait(30)
        session.close()


def vendor_round_trips(qpc_dir, blocks, block_size=200):
    """Block means (microseconds) of an ExecObj round trip and of InferenceSet's, alternating."""
    import numpy as np
    import qaicrt
    context = qaicrt.Context([0])
    qpc = qaicrt.Qpc(str(qpc_dir))
    x = np.full((1, 16), -1.0, np.float32)

    program = qaicrt.Program(context, 0, qpc)
    assert program.load() == qaicrt.QS_SUCCESS and program.activate() == qaicrt.QS_SUCCESS
    exec_obj, queue = qaicrt.ExecObj(context, program), qaicrt.Queue(context, 0)
    buffers = [qaicrt.QBuffer(x), qaicrt.QBuffer(bytes(64))]
    dims = qaicrt.BufferDimensionsVecRef([(4, [1, 16]), (4, [1, 16])])

    inference_set = qaicrt.InferenceSet(context, qpc, 0, 1, 1)
    y = np.empty((1, 16), np.float32)

    def exec_obj_block(n):
        start = time.perf_counter()
        for _ in range(n):
            exec_obj.setData(buffers, dims)
            queue.enqueue(exec_obj)
            if exec_obj.waitForCompletion() != qaicrt.QS_SUCCESS:
                raise RuntimeError(exec_obj.getErrorMessage())
            exec_obj.getData()
        return (time.perf_counter() - start) / n * 1e6

    def inference_set_block(n):
        start = time.perf_counter()
        for request in range(n):
            _, handle = inference_set.getAvailable()
            handle.setBuffers([x, y])
            inference_set.submit(handle, request)
            if inference_set.waitForCompletion(handle) != qaicrt.QS_SUCCESS:
                raise RuntimeError(handle.getErrorMessage())
            inference_set.putCompleted(handle)
        return (time.perf_counter() - start) / n * 1e6

    vendor, own = alternate(exec_obj_block, inference_set_block, blocks, block_size)
    del exec_obj
    return vendor, own


def rate(command, env):
    return float(STATS.findall(subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout)[-1][3])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--blocks", type=int, default=int(os.environ.get("BENCH_PYTHON_BLOCKS", "40")))
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    build = args.build.resolve()
    sys.path.insert(0, str(SOURCE / "tests/support"))
    sys.path.insert(0, str(build / "python"))
    from qaic_processes import Emulator, run

    all_cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(all_cpus)})  # this thread, the emulator, the peer and their threads
    work = pathlib.Path(tempfile.mkdtemp(prefix="qaic-bench-python."))
    emulator = Emulator(build / "bin/qaic-emu")
    try:
        os.environ["QAIC_ROOT"] = str(emulator.root)
        env = dict(os.environ, PYTHONPATH=str(build / "python"), QAIC_CACHE_DIR=str(work / "cache"))
        (work / "tiny.json").write_text(json.dumps(TINY))
        tiny = work / "tiny"
        run([build / "bin/qaic-exec", f"-m={work / 'tiny.json'}", f"-aic-binary-dir={tiny}"])
        smallcnn = work / "smallcnn"
        run([build / "bin/qaic-exec", f"-m={SOURCE / 'examples/smallcnn/smallcnn.json'}", f"-aic-binary-dir={smallcnn}"])
        print(f"CPU: {cpu_name()}")

        cpp, python = round_trips(build, tiny, args.blocks)
        c, p = statistics.median(cpp), statistics.median(python)
        print(f"Session.run, relu over 16 floats / C++ sync round trip (TinySyncRoundTrip's calls), one CPU: "
              f"{p:.1f} us / {c:.1f} us = {p / c:.2f}x ({verdict(p / c <= 1.5)} the <= 1.5x goal; medians of "
              f"{args.blocks} alternating blocks of 200)")

        vendor, own = vendor_round_trips(tiny, args.blocks)
        v, o = statistics.median(vendor), statistics.median(own)
        print(f"ExecObj round trip / InferenceSet's Python round trip, relu over 16 floats, one CPU: "
              f"{v:.1f} us / {o:.1f} us = {v / o:.2f}x ({verdict(v / o <= 1.3)} the <= 1.3x goal; medians of "
              f"{args.blocks} alternating blocks of 200)")

        os.sched_setaffinity(0, all_cpus)
        subprocess.run(["taskset", "-a", "-p", "-c", ",".join(map(str, sorted(all_cpus))), str(emulator.pid)],
                       check=True, capture_output=True)
        for name, qpc, n in (("relu over 16 floats", tiny, 30000), ("examples/smallcnn", smallcnn, 3000)):
            for set_size, activations in ((10, 1), (4, 2)):
                runner, session = [], []
                for _ in range(args.rounds):
                    runner.append(rate([build / "bin/qaic-runner", "-t", qpc, "-n", str(n), "-S", str(set_size),
                                        "-a", str(activations)], env))
                    session.append(rate([sys.executable, "-c", BENCHMARK, str(qpc), str(n), str(set_size),
                                         str(activations)], env))
                r, s = statistics.median(runner), statistics.median(session)
                print(f"run_benchmark / qaic-runner, {name}, -n {n} -S {set_size} -a {activations}: {s:,.0f} / "
                      f"{r:,.0f} Inf/Sec = {s / r:.2f}x ({verdict(s / r >= 0.8)} the >= 0.8x goal; medians of "
                      f"{args.rounds} alternating runs)")
    finally:
        emulator.stop()
        subprocess.run(["rm", "-rf", str(work)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
