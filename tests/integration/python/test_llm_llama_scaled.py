# SPDX-License-Identifier: Apache-2.0
"""make llm-7b's flow at a size the suite affords: examples/llm/run_llama.py with a Llama-shaped
decoder of 4 layers, hidden 1024 (8 heads of 128), MLP 2816, vocab 32000 (117 M parameters,
224 MiB of float16 weights in ONNX external data), compiled with efficient-transformers' command
line (-mxfp6-matmul included), run on a real qaic-emu through qaic-runner and qaic.Session; the
tokens of both must equal llama_reference.py's and every call's logits be within the flow's
bound. The model is generated once per version of examples/llm's scripts, in the build tree."""
import fcntl
import hashlib
import json
import math
import os
import pathlib
import shutil
import sys
import zlib

import numpy
import onnx
import pytest

BUILD = pathlib.Path(os.environ.get("QAIC_BUILD_DIR", "build")).resolve()
SOURCE = pathlib.Path(os.environ.get("QAIC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3])).resolve()
EXAMPLES = SOURCE / "examples/llm"
sys.path.insert(0, str(SOURCE / "tests/support"))
from qaic_processes import python_environment, run  # noqa: E402

SCALED = ["--layers=4", "--hidden=1024", "--heads=8", "--intermediate=2816", "--vocab=32000", "--ctx-len=64",
          "--prefill-len=16", "--seed=3"]
# A prompt of 20 tokens: a full prefill chunk of 16, then one padded with 12 rows at position -1.
RUN = ["--prompt-len=20", "--generate=5", "--prompt-seed=5", "--reference-weights=mxfp6"]
BOUND = 0.02


@pytest.fixture(scope="module")
def flow():
    """run_llama.py's directory after a successful run (it exits non-zero on a token or logit
    mismatch); the model is kept between runs, keyed by the scripts' contents."""
    scripts = sorted(EXAMPLES.glob("*.py"))
    key = hashlib.sha256(b"".join(s.read_bytes() for s in scripts) + " ".join(SCALED).encode()).hexdigest()[:16]
    parent = BUILD / "generated" / "llama-scaled"
    parent.mkdir(parents=True, exist_ok=True)
    with open(parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for stale in (d for d in parent.iterdir() if d.is_dir() and d.name != key):
            shutil.rmtree(stale, ignore_errors=True)  # 450 MB each: keep only this version's
        out = parent / key
        result = run(["/usr/bin/python3", EXAMPLES / "run_llama.py", "--build", BUILD, "--dir", out, *SCALED, *RUN,
                      "--cores=16", f"--bound={BOUND}"], timeout=600, env=python_environment(BUILD))
    return out, result.stdout


@pytest.fixture(scope="module")
def summary(flow):
    return json.loads((flow[0] / "summary.json").read_text())


def test_the_model_is_onnx_with_every_weight_in_external_data(flow):
    model_dir = flow[0] / "model"
    graph_file = model_dir / "llama.onnx"
    assert graph_file.stat().st_size < 1 << 20, "the graph must hold references, not weights"
    model = onnx.load(str(graph_file), load_external_data=False)
    config = json.loads((model_dir / "config.json").read_text())
    external = {t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL}
    assert external == {t["name"] for t in config["tensors"]}
    weights = sum(t["length"] for t in config["tensors"] if t["kind"] != "rotary")
    # 4 * (4 * 1024^2 + 3 * 1024 * 2816) + 2 * 32000 * 1024 + 9 * 1024 parameters, 2 bytes each.
    assert weights == 2 * (4 * (4 * 1024**2 + 3 * 1024 * 2816) + 2 * 32000 * 1024 + 9 * 1024)
    assert all(t["offset"] % 4096 == 0 for t in config["tensors"])
    operators = {node.op_type for node in model.graph.node}
    assert {"ScatterND", "GatherND", "Sigmoid", "ReduceMean", "Sqrt"} <= operators


def test_any_weight_can_be_regenerated_alone_from_its_seed(flow):
    """The generator of one tensor is seeded by (--seed, crc32 of its name): drawing it again
    gives the bytes in the file."""
    model_dir = flow[0] / "model"
    config = json.loads((model_dir / "config.json").read_text())
    tensor = next(t for t in config["tensors"] if t["name"] == "layers.2.mlp.down.weight")
    generator = numpy.random.default_rng([3, zlib.crc32(tensor["name"].encode())])
    expected = (generator.standard_normal(math.prod(tensor["shape"]), dtype=numpy.float32) * numpy.float32(0.02))
    stored = numpy.memmap(model_dir / "llama.onnx.data", dtype=numpy.float16, mode="r", offset=tensor["offset"],
                          shape=(math.prod(tensor["shape"]),))
    assert numpy.array_equal(stored, expected.astype(numpy.float16))


def test_a_second_export_with_the_same_parameters_writes_nothing(flow):
    result = run(["/usr/bin/python3", EXAMPLES / "export_llama.py", flow[0] / "model", *SCALED])
    assert "already holds this model; nothing written" in result.stdout


def test_qaic_runner_and_the_session_give_the_references_tokens(summary):
    reference = summary["reference_tokens"]
    assert len(reference) == 5 and len(set(reference)) > 1
    assert summary["runner"]["tokens"] == reference
    assert summary["session"]["tokens"] == reference
    assert summary["runner"]["logit_error"] <= BOUND and summary["session"]["logit_error"] <= BOUND


def test_the_program_was_compiled_with_efficient_transformers_command_line(summary, flow):
    command = summary["compile_command"]
    flags = [c.split("=")[0] for c in command[1:]]
    assert flags == ["-m", "-aic-hw", "-aic-hw-version", "-network-specialization-config", "-convert-to-fp16",
                     "-retained-state", "-aic-num-cores", "-custom-IO-list-file", "-compile-only", "-aic-binary-dir",
                     "-mxfp6-matmul"]
    specializations = json.loads((flow[0] / "model/specializations.json").read_text())["specializations"]
    assert specializations == [{"batch_size": "1", "seq_len": "16", "ctx_len": "64"},
                               {"batch_size": "1", "seq_len": "1", "ctx_len": "64"}]


def test_the_summary_table_reports_time_memory_and_the_weight_read_ratio(summary, flow):
    stdout = flow[1]
    for row in ("compile time", "compile peak RSS (VmHWM)", "emulator peak RssAnon", "decode step (median)",
                "decode step / weight read", "memory bandwidth (numpy copy)"):
        assert row in stdout, row
    assert summary["compile"]["seconds"] > 0 and summary["compile"]["memory"]["vm_hwm_mib"] > 0
    assert summary["emulator"]["memory"]["vm_hwm_mib"] > 0 and summary["bandwidth_gb_s"] > 0
    # The weights a decode step reads: everything but the embedding table, one row of it aside;
    # MatMul weights (the layers' and the lm_head's) as MXFP6, 25 bytes per 32 elements.
    matmul_elements = 4 * (4 * 1024**2 + 3 * 1024 * 2816) + 32000 * 1024
    assert summary["decode_weight_bytes"] == matmul_elements * 25 / 32 + 2 * (9 * 1024 + 1024)


def test_logits_beyond_the_bound_or_of_another_shape_end_the_flow_naming_the_call():
    sys.path.insert(0, str(EXAMPLES))
    import run_llama
    want = numpy.array([[1.0, -2.0, 4.0], [0.5, 0.25, -1.0]], dtype=numpy.float32)
    close = want + numpy.float32(0.01)  # 0.01 / 4 and 0.01 / 1: within 0.02
    assert run_llama.check_logits("qaic-runner", close, want, BOUND) == pytest.approx(0.01)
    far = want.copy()
    far[1, 2] += 0.03  # 0.03 / 1 is beyond 0.02
    with pytest.raises(SystemExit, match=r"qaic-runner: the logits of call 1 are 0.03 .* beyond the bound 0.02"):
        run_llama.check_logits("qaic-runner", far, want, BOUND)
    with pytest.raises(SystemExit, match=r"qaic.Session gave logits of shape \(1, 3\)"):
        run_llama.check_logits("qaic.Session", want[:1], want, BOUND)


def test_the_reference_refuses_a_directory_that_is_no_export(tmp_path):
    result = run(["/usr/bin/python3", EXAMPLES / "llama_reference.py", tmp_path, tmp_path / "out"], check=False)
    assert result.returncode == 1
    assert f"{tmp_path / 'config.json'}: no such file" in result.stderr
