# SPDX-License-Identifier: Apache-2.0
"""efficient-transformers' convention on the emulated card: examples/llm/export_decoder.py
--convention efficient-transformers exports a decoder whose prompt runs in prefill chunks, the last
one padded with position -1, whose cache writes are ScatterND rows marked INT32_MAX for padding
(written nowhere) and whose cache reads are GatherND at INT32_MAX beyond the call's largest
position (zeros). Compiled with the command efficient-transformers runs and driven by qaic.Session
as its generation loop drives a session, and by the vendor's lower-level API (Program, ExecObj,
Queue, the aicapi IoDesc) as efficient-transformers' own inference session drives it, it must
give PyTorch's greedy tokens; a position at ctx_len, which is no marker, must still fail that
inference with the named device error."""
import json
import os
import pathlib
import sys

import numpy
import onnx
import pytest

BUILD = pathlib.Path(os.environ.get("QAIC_BUILD_DIR", "build")).resolve()
SOURCE = pathlib.Path(os.environ.get("QAIC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3])).resolve()
sys.path.insert(0, str(SOURCE / "tests/support"))
from llm_export import EFFICIENT_TRANSFORMERS_DECODER, exported_decoder  # noqa: E402
from qaic_processes import compile_program, python_environment, run  # noqa: E402

BIN = BUILD / "bin"

# The loop of efficient-transformers' text generation, written against qaic.Session: the prompt
# padded to whole chunks (pad token at position -1), one run per chunk, the first token from the
# last chunk's logits, then one run per token at the next position. Prints one JSON line per call
# (its logits), then the tokens; with a position given as argv[3], the decode step at that
# position instead, and whether it fails with QS_DEVICE_ERROR, and its message.
SESSION_LOOP = r"""
import json, sys
import numpy as np
import qaic, qaicrt

program, config = sys.argv[1], json.loads(open(sys.argv[2]).read())
session = qaic.Session(program)
prompt, chunk = config["prompt"], config["prefill_len"]
padded = -(-len(prompt) // chunk) * chunk
ids = np.full((1, padded), config["pad_token"], np.int64)
ids[0, :len(prompt)] = prompt
positions = np.where(np.arange(padded) < len(prompt), np.arange(padded), -1)[None, :].astype(np.int64)
for k in range(padded // chunk):
    part = slice(k * chunk, (k + 1) * chunk)
    logits = session.run({"input_ids": ids[:, part], "position_ids": positions[:, part]})["logits"]
    print(json.dumps({"logits": logits.reshape(-1).tolist()}))
tokens = [int(logits.reshape(-1).argmax())]
position = len(prompt)
if len(sys.argv) > 3:
    try:
        session.run({"input_ids": np.array([[tokens[0]]], np.int64),
                     "position_ids": np.array([[int(sys.argv[3])]], np.int64)})
    except qaicrt.Error as error:
        print(json.dumps({"device_error": error.status == qaicrt.QS_DEVICE_ERROR, "message": str(error)}))
    sys.exit(0)
while len(tokens) < config["generate"]:
    logits = session.run({"input_ids": np.array([[tokens[-1]]], np.int64),
                          "position_ids": np.array([[position]], np.int64)})["logits"]
    print(json.dumps({"logits": logits.reshape(-1).tolist()}))
    tokens.append(int(logits.reshape(-1).argmax()))
    position += 1
print(json.dumps({"tokens": tokens}))
"""

# efficient-transformers' generation loop over its inference session's calls (tests/support's
# VendorStyleSession: Program, ExecObj, Queue over the IoDesc): the retained cache's bindings
# skipped with size-0 buffers, a logits placeholder, chunked prefill padded with position -1, then
# decode. argv: program, config.json, mode ("generate", "reactivate", "wrong-shape"). Prints JSON
# lines.
VENDOR_LOOP = r"""
import json, sys
import numpy as np
import qaicrt
from vendor_session import VendorStyleSession

program_dir, config, mode = sys.argv[1], json.loads(open(sys.argv[2]).read()), sys.argv[3]
session = VendorStyleSession(program_dir, device_ids=[0])
input_ids = session.index["input_ids"]
prefill_len = max(shape[input_ids][1][1] for shape in session.allowed_shapes)
vocab = session.allowed_shapes[0][session.index["logits"]][1][2]


def generate():
    session.skip_buffers([b.name for b in session.bindings if b.name.startswith("past_")])
    session.set_buffers({"logits": np.zeros((1, 1, vocab), np.float32)})
    prompt = config["prompt"]
    padded = -(-len(prompt) // prefill_len) * prefill_len
    ids = np.full((1, padded), config["pad_token"], np.int64)
    ids[0, :len(prompt)] = prompt
    positions = np.where(np.arange(padded) < len(prompt), np.arange(padded), -1)[None, :]
    for k in range(padded // prefill_len):
        part = slice(k * prefill_len, (k + 1) * prefill_len)
        status, outputs = session.run({"input_ids": ids[:, part], "position_ids": positions[:, part]})
        assert status == qaicrt.QStatus.QS_SUCCESS, status
    tokens, position = [int(outputs["logits"].argmax())], len(prompt)
    while len(tokens) < config["generate"]:
        status, outputs = session.run({"input_ids": np.array([[tokens[-1]]], np.int64),
                                       "position_ids": np.array([[position]], np.int64)})
        assert status == qaicrt.QStatus.QS_SUCCESS, status
        tokens.append(int(outputs["logits"].argmax()))
        position += 1
    return tokens


print(json.dumps({"tokens": generate()}))
if mode == "reactivate":
    session.deactivate()
    session.activate()
    print(json.dumps({"tokens": generate()}))
if mode == "wrong-shape":
    status, _ = session.run({"input_ids": np.zeros((1, prefill_len + 1), np.int64),
                             "position_ids": np.arange(prefill_len + 1, dtype=np.int64)[None, :]})
    after, outputs = session.run({"input_ids": np.array([[1]], np.int64), "position_ids": np.array([[0]], np.int64)})
    print(json.dumps({"status": qaicrt.QStatus(status).name, "after": qaicrt.QStatus(after).name,
                      "logits": None if outputs is None else list(outputs["logits"].shape)}))
"""


@pytest.fixture(scope="module")
def model():
    return exported_decoder(BUILD, SOURCE, EFFICIENT_TRANSFORMERS_DECODER)


@pytest.fixture(scope="module")
def config(model):
    return json.loads((model / "config.json").read_text())


@pytest.fixture(scope="module")
def program(model, config, workdir):
    """Compiled with the command line efficient-transformers runs (the cache float16 on the
    device through its custom IO file)."""
    out = workdir / "qpc"
    compile_program(BIN / "qaic-exec", model / "decoder.onnx", out, "-aic-hw", "-aic-hw-version=2.0",
                    f"-network-specialization-config={model / 'specializations.json'}", "-convert-to-fp16",
                    "-retained-state", "-aic-num-cores=2", f"-custom-IO-list-file={model / 'custom_io.yaml'}",
                    "-compile-only")
    return out


def session_loop(emulator, program, model, *extra):
    env = python_environment(BUILD, emulator.env(PYTHONPATH=BUILD / "python"))
    result = run(["/usr/bin/python3", "-c", SESSION_LOOP, program, model / "config.json", *extra], env=env)
    return [json.loads(line) for line in result.stdout.splitlines()]


def torch_logits(model, step):
    return numpy.fromfile(model / "reference" / f"step{step}" / "logits.raw", dtype=numpy.float32)


def test_the_export_follows_efficient_transformers_convention(model, config):
    graph = onnx.load(str(model / "decoder.onnx")).graph
    operators = {node.op_type for node in graph.node}
    assert {"ScatterND", "GatherND"} <= operators and "ScatterElements" not in operators
    gathers = [node for node in graph.node if node.op_type == "GatherND"]
    assert all(attribute.i == 2 for node in gathers for attribute in node.attribute if attribute.name == "batch_dims")
    position_ids = next(i for i in graph.input if i.name == "position_ids")
    assert position_ids.type.tensor_type.elem_type == onnx.TensorProto.INT64
    specializations = json.loads((model / "specializations.json").read_text())["specializations"]
    assert specializations == [{"batch_size": "1", "seq_len": "4", "ctx_len": "32"},
                               {"batch_size": "1", "seq_len": "1", "ctx_len": "32"}]
    names = [line.split(": ")[1] for line in (model / "custom_io.yaml").read_text().splitlines() if "IOName" in line]
    assert names == ["past_key.0", "past_value.0", "past_key.1", "past_value.1", "past_key.0_RetainedState",
                     "past_value.0_RetainedState", "past_key.1_RetainedState", "past_value.1_RetainedState"]
    # The prompt does not fill its chunks: the reference's last prefill call is padded with -1.
    assert config["prompt_len"] % config["prefill_len"] != 0 and config["prefill_chunks"] == 2
    last_chunk = numpy.fromfile(model / "reference/step1/position_ids.raw", dtype=numpy.int64)
    assert last_chunk.tolist() == [4, 5, -1, -1]
    assert len(set(config["tokens"])) > 1


def test_the_efficient_transformers_command_line_gives_pytorchs_tokens(emulator, model, config, program):
    """Chunked prefill (the last chunk padded at -1) then decode, through qaic.Session; the cache
    is float16 on the device, so the logits are within float16's rounding of PyTorch's."""
    lines = session_loop(emulator, program, model)
    assert lines[-1]["tokens"] == config["tokens"], f"tokens {lines[-1]['tokens']}, PyTorch's {config['tokens']}"
    calls = [numpy.array(line["logits"], dtype=numpy.float32) for line in lines[:-1]]
    assert len(calls) == config["prefill_chunks"] + config["generate"] - 1
    for step, got in enumerate(calls):
        want = torch_logits(model, step)
        assert numpy.max(numpy.abs(got - want)) <= 1e-2 * numpy.max(numpy.abs(want)), f"logits of call {step}"


def test_qaic_runner_checks_every_chunk_and_step_against_pytorch(emulator, model, config, workdir):
    """generation.json: one IO set per prefill chunk (the -1 padding included), then one per decode
    step, on a program whose cache stays float: -c holds every call's logits to PyTorch's."""
    program = workdir / "float-cache"
    compile_program(BIN / "qaic-exec", model / "decoder.onnx", program, "-retained-state",
                    f"-network-specialization-config={model / 'specializations.json'}")
    calls = config["prefill_chunks"] + config["generate"] - 1
    out = workdir / "runner-out"
    result = run([BIN / "qaic-runner", "-t", program, "--aic-batch-json-input", model / "generation.json", "-n",
                  str(calls), "-S", "1", "-T", "1", "-a", "1", "-c", "--write-output-dir", out,
                  "--write-output-num-samples", str(calls)], check=False, env=emulator.env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Output check passed: {calls} inferences" in result.stdout
    for step in range(calls):
        got = numpy.fromfile(out / f"logits-inf-{step}.bin", dtype=numpy.float32)
        want = torch_logits(model, step)
        assert numpy.max(numpy.abs(got - want)) <= 1e-4 * numpy.max(numpy.abs(want)), f"logits of call {step}"


def test_a_position_at_ctx_len_is_still_the_named_device_error(emulator, model, config, program):
    """ctx_len is past the cache but is not the marker: that inference fails with QS_DEVICE_ERROR
    and a message naming the operator and the index."""
    lines = session_loop(emulator, program, model, str(config["ctx_len"]))
    failure = lines[-1]
    assert failure["device_error"], failure
    index = f"index {config['ctx_len']} at position 0 is out of range [-{config['ctx_len']}, {config['ctx_len']})"
    assert index in failure["message"] and "(gather" in failure["message"], failure


def vendor_loop(emulator, program, model, mode):
    env = python_environment(BUILD, emulator.env(PYTHONPATH=BUILD / "python"))
    env["PYTHONPATH"] += f":{SOURCE / 'tests/support'}"  # vendor_session
    result = run(["/usr/bin/python3", "-c", VENDOR_LOOP, program, model / "config.json", mode], env=env)
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def test_the_vendor_runtime_api_loop_gives_pytorchs_tokens(emulator, model, config, program):
    """Program / ExecObj / Queue over the IoDesc, as efficient-transformers' session drives them:
    the retained cache's bindings skipped with size-0 buffers, a read-only logits placeholder,
    chunked prefill padded with -1, decode; then deactivate and activate again, which starts from
    a new cache and must give the same tokens."""
    lines, _ = vendor_loop(emulator, program, model, "reactivate")
    assert [line["tokens"] for line in lines] == [config["tokens"], config["tokens"]]


def test_the_vendor_runtime_api_refuses_a_shape_no_specialization_has(emulator, model, config, program):
    """input_ids one longer than the prefill: no specialization matches; waitForCompletion returns
    a non-success status after the vendor's message, and the slot serves the next inference."""
    lines, stderr = vendor_loop(emulator, program, model, "wrong-shape")
    assert lines[0]["tokens"] == config["tokens"]
    assert lines[1] == {"status": "QS_BUFFER_DIMS", "after": "QS_SUCCESS", "logits": [1, 1, config["vocab"]]}
    assert "No matching dimension found" in stderr
