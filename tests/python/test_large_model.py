# SPDX-License-Identifier: Apache-2.0
"""A model with 512 MiB of ONNX external data (a sparse file: zeros but for a few rows) compiles
with -convert-to-fp16 while qaic-exec's private memory stays far below the data's size (the data
is mapped, the constants converted and written a chunk at a time), and the emulator holds the
loaded constants in shared memory, not its private heap (float constants, which the MatMul packs
in place: an fp16 constant is widened to float by the kernels when the program is built, a copy
outside this test's reach). Memory bounds, not timings."""
import gc
import os
import pathlib
import subprocess
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import BIN

import qaic

ROWS, COLUMNS = 8192, 16384  # w [ROWS, COLUMNS] float: 512 MiB
DATA_BYTES = ROWS * COLUMNS * 4
MIB = 1 << 20
FILLED_ROWS = (0, 4097, ROWS - 1)


def row_values(row):
    return (np.arange(COLUMNS, dtype=np.float32) % 7 - 3) * (row % 5 + 1) / 4


def big_matmul_onnx(directory):
    """y = x @ w, x [1, ROWS], w stored as external data in w.data (sparse on disk)."""
    data = directory / "w.data"
    with open(data, "wb") as f:
        f.truncate(DATA_BYTES)
        for row in FILLED_ROWS:
            f.seek(row * COLUMNS * 4)
            f.write(row_values(row).tobytes())
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([ROWS, COLUMNS])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "w.data"), ("offset", "0"), ("length", str(DATA_BYTES))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, ROWS])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, COLUMNS])], [w])
    model = directory / "big.onnx"
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(model))
    return model


def status_kib(pid, field):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} missing from /proc/{pid}/status")


class PeakPrivateMemory:
    """Samples a process's RssAnon (its private memory: heap, not the page cache of mapped
    files) every few milliseconds until stopped; the largest sample is the peak."""

    def __init__(self, pid):
        self.pid, self.peak_kib, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample)
        self._thread.start()

    def _sample(self):
        while not self._stop.is_set():
            try:
                self.peak_kib = max(self.peak_kib, status_kib(self.pid, "RssAnon"))
            except (OSError, AssertionError):
                return  # the process is gone
            time.sleep(0.005)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.peak_kib


def compile_watched(model, out, *flags):
    """qaic-exec with its private memory sampled; returns the peak RssAnon in KiB."""
    process = subprocess.Popen([BIN / "qaic-exec", f"-m={model}", f"-aic-binary-dir={out}", *flags],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = PeakPrivateMemory(process.pid)
    _, status, usage = os.wait4(process.pid, 0)
    peak_private_kib = sampler.stop()
    stdout, stderr = process.communicate()
    assert os.waitstatus_to_exitcode(status) == 0, stdout + stderr
    print(f"qaic-exec {' '.join(flags)}: peak private (RssAnon) {peak_private_kib // 1024} MiB, peak RSS with "
          f"mapped pages (ru_maxrss) {usage.ru_maxrss // 1024} MiB, data {DATA_BYTES // MIB} MiB")
    return peak_private_kib


@pytest.fixture(scope="module")
def big_model(workdir):
    return big_matmul_onnx(workdir)


def test_compile_maps_the_external_data_and_streams_the_constants(big_model, workdir):
    out = workdir / "big16"
    peak_private_kib = compile_watched(big_model, out, "-convert-to-fp16")
    # A copy of the weights (512 MiB) or of their fp16 form (256 MiB) would show here; a quarter of
    # the data leaves room for an AddressSanitizer build's shadow memory (68 MiB measured).
    assert peak_private_kib * 1024 < DATA_BYTES // 4, f"qaic-exec's private memory peaked at {peak_private_kib} KiB"
    container = out / "programqpc.bin"
    assert container.stat().st_size > DATA_BYTES // 2  # the fp16 constant
    # The zero rows became holes: the file takes a few MiB of disk, not 256.
    assert container.stat().st_blocks * 512 < 32 * MIB, container.stat().st_blocks


def test_emulator_holds_the_constants_in_shared_memory(emulator, big_model, workdir):
    out = workdir / "big32"
    compile_watched(big_model, out)
    before = status_kib(emulator.pid, "RssAnon")
    session = qaic.Session(out, set_size=1)
    x = np.zeros((1, ROWS), dtype=np.float32)
    x[0, 0], x[0, 4097], x[0, ROWS - 1] = 1.0, 2.0, -1.0
    y = session.run({"x": x})["y"]
    expected = row_values(0) + 2 * row_values(4097) - row_values(ROWS - 1)
    np.testing.assert_allclose(y[0], expected, rtol=1e-5, atol=1e-5)
    loaded = status_kib(emulator.pid, "RssAnon")
    print(f"qaic-emu: RssAnon {before // 1024} MiB before the load, {loaded // 1024} MiB loaded and run; "
          f"RssShmem {status_kib(emulator.pid, 'RssShmem') // 1024} MiB")
    # The 512 MiB of constants (packed in place for the MatMul) are not the emulator's private
    # memory.
    assert (loaded - before) * 1024 < DATA_BYTES // 4, f"RssAnon grew from {before} to {loaded} KiB"
    assert status_kib(emulator.pid, "RssShmem") * 1024 >= DATA_BYTES // 2  # where the constants are
    # Released with the set: the load's memory file goes with it.
    del session
    gc.collect()
    deadline = time.monotonic() + 10
    while status_kib(emulator.pid, "RssShmem") * 1024 > DATA_BYTES // 8 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status_kib(emulator.pid, "RssShmem") * 1024 <= DATA_BYTES // 8, "the released load's memory stayed"
