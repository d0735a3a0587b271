# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the Python suite: build/python on sys.path, a real qaic-emu whose root this process
uses ($QAIC_ROOT), and programs compiled with the build tree's qaic-exec."""
import gc
import json
import os
import pathlib
import shutil
import sys
import tempfile

import pytest

BUILD = pathlib.Path(os.environ.get("QAIC_BUILD_DIR", "build")).resolve()
SOURCE = pathlib.Path(os.environ.get("QAIC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2])).resolve()
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(SOURCE / "tests/support"))
from llm_export import SMALL_DECODER, exported_decoder  # noqa: E402
from qaic_processes import Emulator, Qaicd, compile_program, run  # noqa: E402

BIN = BUILD / "bin"


@pytest.fixture(scope="module")
def emulator():
    """One qaic-emu (two devices) for the test module; QAIC_ROOT points at it meanwhile."""
    emu = Emulator(BIN / "qaic-emu", devices=2)
    previous = os.environ.get("QAIC_ROOT")
    os.environ["QAIC_ROOT"] = str(emu.root)
    try:
        yield emu
    finally:
        gc.collect()  # what the tests left behind lets go of the device before it stops
        if previous is None:
            os.environ.pop("QAIC_ROOT", None)
        else:
            os.environ["QAIC_ROOT"] = previous
        emu.stop()


@pytest.fixture
def qaicd(emulator):
    daemon = Qaicd(BIN / "qaicd", emulator)
    os.environ["QAICD_SOCKET"] = str(daemon.socket)
    try:
        yield daemon
    finally:
        os.environ.pop("QAICD_SOCKET", None)
        daemon.stop()


@pytest.fixture(scope="module")
def workdir():
    directory = pathlib.Path(tempfile.mkdtemp(prefix="qaic-python-test."))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def ir_network(ops, io, **extra):
    network = {"ops": ops, "io": io}
    network.update(extra)
    return network


def relu_ir(dims, dtype="TL_FLOAT", **io_flags):
    """y = relu(x) over `dims`; io_flags (is_partial_allowed, ...) apply to both buffers."""
    return ir_network(
        [{"name": "relu", "optype": "relu", "tensors_in": [{"arg_name": "src", "name": "x"}],
          "tensors_out": [{"arg_name": "dst", "name": "y"}], "params": []}],
        [dict({"name": "x", "tensor": "x", "direction": "in", "dtype": dtype, "dims": dims}, **io_flags),
         dict({"name": "y", "tensor": "y", "direction": "out", "dtype": dtype, "dims": dims}, **io_flags)])


def compile_file(directory, model, *flags):
    """Compiles a model file (JSON IR or ONNX) with qaic-exec into directory/<its stem>."""
    out = pathlib.Path(directory) / pathlib.Path(model).stem
    compile_program(BIN / "qaic-exec", model, out, *flags)
    return out


def compile_ir(directory, name, network, *flags):
    """Compiles a JSON IR given as a dict into directory/name; returns that directory."""
    ir = pathlib.Path(directory) / f"{name}.json"
    ir.write_text(json.dumps(network))
    return compile_file(directory, ir, *flags)


@pytest.fixture(scope="module")
def relu16(workdir):
    """A tiny program: relu over [1,16] floats."""
    return compile_ir(workdir, "relu16", relu_ir([1, 16]))


@pytest.fixture(scope="module")
def smallcnn(workdir):
    return compile_file(workdir, SOURCE / "examples/smallcnn/smallcnn.json")


@pytest.fixture(scope="module")
def decoder():
    """examples/llm's exported decoder at the small size (tests/support/llm_export.py)."""
    return exported_decoder(BUILD, SOURCE, SMALL_DECODER)


@pytest.fixture(scope="module")
def config(decoder):
    return json.loads((decoder / "config.json").read_text())


@pytest.fixture(scope="module")
def decoder_program(decoder, workdir):
    """The decoder as one program: its cache retained, prefill and decode as specializations."""
    return compile_file(workdir, decoder / "decoder.onnx", "-retained-state",
                        f"-network-specialization-config={decoder / 'specializations.json'}")
