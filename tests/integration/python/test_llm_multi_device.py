# SPDX-License-Identifier: Apache-2.0
"""examples/llm's decoder split over two and four emulated cards (issue 37): compiled with the
partition config efficient-transformers writes for compile(num_devices=N), tensor slicing gives
each card its heads of the attention and of the retained KV cache, and greedy generation gives
PyTorch's tokens through qaic-runner (-d per card), the C++ API (llm-generate) and both Python
sessions given device_ids=[0, 1]: qaic.Session and efficient-transformers' session calls
(tests/support/vendor_session.py, devMapping "0:1"). The bytes between the cards move peer to
peer (each card's p2p counters), only on the cards named. examples/llm/README.md's "On two
devices" runs as written."""
import json
import os
import pathlib
import re
import sys

import numpy
import pytest

BUILD = pathlib.Path(os.environ.get("QAIC_BUILD_DIR", "build")).resolve()
SOURCE = pathlib.Path(os.environ.get("QAIC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3])).resolve()
sys.path.insert(0, str(SOURCE / "tests/support"))
from llm_export import EFFICIENT_TRANSFORMERS_DECODER, SMALL_DECODER, exported_decoder  # noqa: E402
from qaic_processes import Emulator, compile_program, python_environment, run  # noqa: E402

BIN = BUILD / "bin"
CARDS = 4

# efficient-transformers' generation loop over a session given device_ids (argv[4], "0,1"; ""
# gives none): "qaic" drives qaic.Session(program, device_ids=...), "vendor" the vendor's
# Program / ExecObj / Queue as its QAICInferenceSession does. Chunked prefill padded with
# position -1, then one decode call per token. Prints one JSON line per call (its logits), then
# the tokens.
SESSION_LOOP = r"""
import json, sys
import numpy as np

program, config, kind = sys.argv[1], json.loads(open(sys.argv[2]).read()), sys.argv[3]
device_ids = [int(d) for d in sys.argv[4].split(",")] if sys.argv[4] else None
if kind == "qaic":
    import qaic
    session = qaic.Session(program, device_ids=device_ids)
    call = lambda inputs: session.run(inputs)["logits"]
else:
    import qaicrt
    from vendor_session import VendorStyleSession
    session = VendorStyleSession(program, device_ids=device_ids)
    session.skip_buffers([b.name for b in session.bindings if b.name.startswith("past_")])
    session.set_buffers({"logits": np.zeros((1, 1, config["vocab"]), np.float32)})

    def call(inputs):
        status, outputs = session.run(inputs)
        assert status == qaicrt.QStatus.QS_SUCCESS, status
        return outputs["logits"]
prompt, chunk = config["prompt"], config["prefill_len"]
padded = -(-len(prompt) // chunk) * chunk
ids = np.full((1, padded), config["pad_token"], np.int64)
ids[0, :len(prompt)] = prompt
positions = np.where(np.arange(padded) < len(prompt), np.arange(padded), -1)[None, :].astype(np.int64)
for k in range(padded // chunk):
    part = slice(k * chunk, (k + 1) * chunk)
    logits = call({"input_ids": ids[:, part], "position_ids": positions[:, part]})
    print(json.dumps({"logits": logits.reshape(-1).tolist()}))
tokens, position = [int(logits.reshape(-1).argmax())], len(prompt)
while len(tokens) < config["generate"]:
    logits = call({"input_ids": np.array([[tokens[-1]]], np.int64), "position_ids": np.array([[position]], np.int64)})
    print(json.dumps({"logits": logits.reshape(-1).tolist()}))
    tokens.append(int(logits.reshape(-1).argmax()))
    position += 1
print(json.dumps({"tokens": tokens}))
"""


@pytest.fixture(scope="module")
def emulator():
    emu = Emulator(BIN / "qaic-emu", devices=CARDS)
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture(scope="module")
def et_model():
    return exported_decoder(BUILD, SOURCE, EFFICIENT_TRANSFORMERS_DECODER)


@pytest.fixture(scope="module")
def et_config(et_model):
    return json.loads((et_model / "config.json").read_text())


def partition_config(directory, devices, cores=2):
    """The file efficient-transformers writes for compile(num_devices=devices)."""
    path = directory / f"mdp{devices}.json"
    ids = list(range(devices))
    path.write_text(json.dumps({
        "connections": [{"devices": ids, "type": "p2p"}],
        "partitions": [{"name": "Partition0", "devices": [{"deviceId": d, "numCores": cores} for d in ids]}]}))
    return path


def compile_split(model, out, devices, *flags):
    """qaic-exec -v with the partition config of `devices` cards; returns its slicing report."""
    result = compile_program(BIN / "qaic-exec", model / "decoder.onnx", out, "-v",
                             f"-mdp-load-partition-config={partition_config(out.parent, devices)}", *flags)
    return result.stdout


def efficient_transformers_flags(model):
    return ["-aic-hw", "-aic-hw-version=2.0", f"-network-specialization-config={model / 'specializations.json'}",
            "-convert-to-fp16", "-retained-state", "-aic-num-cores=2",
            f"-custom-IO-list-file={model / 'custom_io.yaml'}", "-compile-only"]


@pytest.fixture(scope="module")
def et_program(et_model, workdir):
    """Two cards, compiled with efficient-transformers' command line (the cache float16 on the
    device) and the partition config it writes; with the slicing report."""
    out = workdir / "et-2"
    report = compile_split(et_model, out, 2, *efficient_transformers_flags(et_model))
    return out, report


def p2p_bytes(emulator):
    """Each card's bytes sent peer to peer so far."""
    root = pathlib.Path(emulator.root) / "sys/class/accel"
    return [int((root / f"accel{d}/qaic-emu/p2p_tx_bytes").read_text()) for d in range(CARDS)]


def collectives(report, kind):
    """The report's lines of the collectives of one kind (all_reduce_sum, all_gather)."""
    return [line for line in report.splitlines() if line.startswith("collective ") and f": {kind} " in line]


def torch_logits(model, step):
    return numpy.fromfile(model / "reference" / f"step{step}" / "logits.raw", dtype=numpy.float32)


def worst_relative(got, want):
    return float(numpy.max(numpy.abs(got - want)) / numpy.max(numpy.abs(want)))


def runner_generation_matches_pytorch(emulator, model, config, program, devices, out):
    """qaic-runner -d per card over the model's whole generation (prefill chunks, then decode
    calls, one activation): every call's logits within 1e-4 x max|torch| of PyTorch's, and
    PyTorch's tokens."""
    calls = config["prefill_chunks"] + config["generate"] - 1
    cards = [arg for d in range(devices) for arg in ("-d", str(d))]
    result = run([BIN / "qaic-runner", "-t", program, *cards, "--aic-batch-json-input", model / "generation.json",
                  "-n", str(calls), "-S", "1", "-T", "1", "-a", "1", "-c", "--write-output-dir", out,
                  "--write-output-num-samples", str(calls)], check=False, env=emulator.env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Output check passed: {calls} inferences" in result.stdout
    for step in range(calls):
        got = numpy.fromfile(out / f"logits-inf-{step}.bin", dtype=numpy.float32)
        assert worst_relative(got, torch_logits(model, step)) <= 1e-4, f"logits of call {step}"
        if step >= config["prefill_chunks"] - 1:
            assert int(got.argmax()) == config["tokens"][step - config["prefill_chunks"] + 1]


def test_each_card_keeps_its_heads_of_the_float16_cache(et_program):
    """The report of the split, Megatron's: each fused qkv projection divided by heads (its q, k
    and v columns as three groups), each output projection and second MLP matmul by rows with one
    sum, every cache kept by heads; attention's float16 reads split as their matmuls, so the only
    tensor made whole is the logits (the vocabulary projection's columns, gathered)."""
    _, report = et_program
    for layer in range(2):
        for cache in ("past_key", "past_value"):
            assert f"retained buffer '{cache}.{layer}': each part keeps its slice along axis 1" in report, report
    assert report.count("column split in 3 fused groups") == 2 and report.count("row split") == 4, report
    assert len(collectives(report, "all_reduce_sum")) == 4, report
    gathers = collectives(report, "all_gather")
    assert len(gathers) == 1 and "of 'logits'" in gathers[0], report


@pytest.mark.parametrize("kind", ["qaic", "vendor"])
def test_a_session_given_two_device_ids_gives_pytorchs_tokens(emulator, et_model, et_config, et_program, kind):
    """qaic.Session(device_ids=[0, 1]) and efficient-transformers' session calls (Context over
    QIDList([0, 1]), devMapping "0:1"): PyTorch's tokens, the logits within float16's rounding
    (the cache is float16 on the cards), and cards 0 and 1 exchanged bytes, cards 2 and 3 none."""
    program, _ = et_program
    env = python_environment(BUILD, emulator.env(PYTHONPATH=BUILD / "python"))
    env["PYTHONPATH"] += f":{SOURCE / 'tests/support'}"
    before = p2p_bytes(emulator)
    result = run(["/usr/bin/python3", "-c", SESSION_LOOP, program, et_model / "config.json", kind, "0,1"], env=env)
    after = p2p_bytes(emulator)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1]["tokens"] == et_config["tokens"], f"tokens {lines[-1]['tokens']}, PyTorch's {et_config['tokens']}"
    calls = [numpy.array(line["logits"], dtype=numpy.float32) for line in lines[:-1]]
    assert len(calls) == et_config["prefill_chunks"] + et_config["generate"] - 1
    for step, got in enumerate(calls):
        assert worst_relative(got, torch_logits(et_model, step)) <= 1e-2, f"logits of call {step}"
    moved = [a - b for a, b in zip(after, before)]
    assert moved[0] > 0 and moved[1] > 0 and moved[2:] == [0, 0], moved


def test_a_session_without_device_ids_takes_the_first_free_linked_cards(emulator, et_model, et_config, et_program):
    """qaic.Session(program) of a two-part program: the runtime puts it on the first two free
    cards linked peer to peer (all four are one group here: cards 0 and 1)."""
    program, _ = et_program
    env = python_environment(BUILD, emulator.env(PYTHONPATH=BUILD / "python"))
    before = p2p_bytes(emulator)
    result = run(["/usr/bin/python3", "-c", SESSION_LOOP, program, et_model / "config.json", "qaic", ""], env=env)
    moved = [a - b for a, b in zip(p2p_bytes(emulator), before)]
    assert json.loads(result.stdout.splitlines()[-1])["tokens"] == et_config["tokens"]
    assert moved[0] > 0 and moved[1] > 0 and moved[2:] == [0, 0], moved


@pytest.mark.parametrize("devices", [2, 4])
def test_qaic_runner_over_the_cards_checks_every_call_against_pytorch(emulator, et_model, et_config, workdir,
                                                                      devices):
    """The retained, specialized program (prefill chunks and decode from one file), its cache
    float: split over 2 and 4 cards, qaic-runner -d per card holds every call's logits to
    PyTorch's within the suite's 1e-4 x max|torch|, as the single-card program is held."""
    program = workdir / f"runner-{devices}"
    report = compile_split(et_model, program, devices, "-retained-state",
                           f"-network-specialization-config={et_model / 'specializations.json'}")
    assert f"retained buffer 'past_value.1': each part keeps its slice along axis 1" in report, report
    assert len(collectives(report, "all_reduce_sum")) == 4, report
    out = workdir / f"runner-out-{devices}"
    runner_generation_matches_pytorch(emulator, et_model, et_config, program, devices, out)


def test_qaic_runner_takes_one_activation_over_several_cards_only_for_a_split_program(emulator, et_model, workdir):
    """-d 0 -d 1 -a 1 is one activation of a split program on two cards (above); for a program
    compiled for one card it would leave a card without an activation: refused, exit 2."""
    program = workdir / "one-card"
    compile_program(BIN / "qaic-exec", et_model / "decoder.onnx", program, "-retained-state",
                    f"-network-specialization-config={et_model / 'specializations.json'}")
    result = run([BIN / "qaic-runner", "-t", program, "-d", "0", "-d", "1", "-a", "1", "-n", "1"], check=False,
                 env=emulator.env())
    assert result.returncode == 2, result.stdout + result.stderr
    assert "the devices named (2) are more than the 1 activations of a single-device program" in result.stderr


def test_llm_generate_over_two_cards_gives_pytorchs_tokens(emulator, workdir):
    """The C++ API (examples/llm's llm-generate, -d per card) with the plain convention's retained,
    specialized program split over two cards: PyTorch's tokens and logits within 1e-4; one -d for
    a program of two parts is refused, naming the part count."""
    model = exported_decoder(BUILD, SOURCE, SMALL_DECODER)
    config = json.loads((model / "config.json").read_text())
    program = workdir / "plain-2"
    compile_split(model, program, 2, "-retained-state",
                  f"-network-specialization-config={model / 'specializations.json'}")
    logits = workdir / "plain-2-logits"
    logits.mkdir()
    prompt = ",".join(map(str, config["prompt"]))
    result = run([BIN / "llm-generate", "--prompt", prompt, "--tokens", str(config["generate"]), "--logits-dir",
                  logits, "-d", "0", "-d", "1", program], env=emulator.env())
    assert [int(t) for t in result.stdout.splitlines()[0].split()] == config["tokens"], result.stdout
    for step in range(config["generate"]):
        got = numpy.fromfile(logits / f"logits-{step}.bin", dtype=numpy.float32)
        assert worst_relative(got, torch_logits(model, step)) <= 1e-4, f"logits of step {step}"
    refused = run([BIN / "llm-generate", "--prompt", prompt, "-d", "0", program], check=False, env=emulator.env())
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "the program spans 2 devices; give -d once for each" in refused.stderr


def test_qaic_session_refuses_device_ids_that_are_no_list_of_devices(et_program, emulator):
    """device_ids naming a card twice, or none, is a ValueError naming the argument."""
    program, _ = et_program
    env = python_environment(BUILD, emulator.env(PYTHONPATH=BUILD / "python"))
    script = ("import qaic, sys\n"
              "for ids in ([0, 0], [], ['0']):\n"
              "    try:\n"
              "        qaic.Session(sys.argv[1], device_ids=ids)\n"
              "    except ValueError as error:\n"
              "        print(error)\n")
    lines = run(["/usr/bin/python3", "-c", script, program], env=env).stdout.splitlines()
    assert lines == ["device_ids names a device twice: [0, 0]",
                     "device_ids must be a non-empty list of device ids (ints >= 0), not []",
                     "device_ids must be a non-empty list of device ids (ints >= 0), not ['0']"], lines


def test_the_llm_readme_two_device_example_runs_as_written(emulator, workdir):
    """examples/llm/README.md's "On two devices": its export and compile block, its qaic-runner
    block and its Python block, in a directory where build/bin is this build and examples/ the
    source's, on this module's emulator (the README's own emulator start is left out)."""
    readme = (SOURCE / "examples/llm/README.md").read_text()
    section = readme[readme.index("## On two devices"):]
    bash = re.findall(r"```bash\n(.*?)```", section, re.S)
    python = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(bash) == 3 and len(python) == 1 and "qaic-emu" in bash[1]
    directory = workdir / "readme"
    (directory / "build").mkdir(parents=True)
    (directory / "build" / "bin").symlink_to(BIN)
    (directory / "examples").symlink_to(SOURCE / "examples")
    compiled = run(["bash", "-euc", bash[0]], cwd=directory)
    assert "split over 2 devices by tensor slicing" in compiled.stdout, compiled.stdout
    run(["bash", "-euc", bash[2]], cwd=directory, env=emulator.env())
    config = json.loads((directory / "build/llm2/config.json").read_text())
    steps = directory / "build/llm2/steps"
    chunks = config["prefill_chunks"]
    argmaxes = [int(numpy.fromfile(steps / f"logits-inf-{k}.bin", dtype=numpy.float32).argmax())
                for k in range(chunks - 1, chunks + config["generate"] - 1)]
    assert argmaxes == config["tokens"]
    env = python_environment(BUILD, emulator.env(PYTHONPATH=BUILD / "python"))
    result = run(["/usr/bin/python3", "-c", python[0]], cwd=directory, env=env)
    assert result.stdout.strip() == f"{config['tokens']} True", result.stdout


def channel_bytes(report):
    """The bytes of each tensor the pipeline report says one stage sends the next."""
    return [int(b) for b in re.findall(r"^  channel \d+: '.*' \((\d+) bytes\)", report, re.M)]


@pytest.mark.parametrize("stages", [2, 4])
def test_pipeline_stages_keep_each_cache_on_its_card(emulator, et_model, et_config, workdir, stages):
    """The retained, specialized program cut into 2 and 4 pipeline stages (-mdp-pipeline-stages):
    each KV cache stays on the card of the layer that reads and updates it, so what moves between
    cards is activations, each smaller than one cache; a stage fed only by the previous one still
    runs the specialization of the call (prefill chunks, then decode). qaic-runner -d per card
    holds every call's logits to PyTorch's within 1e-4 x max|torch| and gives PyTorch's tokens."""
    program = workdir / f"pipeline-{stages}"
    report = compile_program(BIN / "qaic-exec", et_model / "decoder.onnx", program, "-v",
                             f"-mdp-pipeline-stages={stages}", "-retained-state",
                             f"-network-specialization-config={et_model / 'specializations.json'}").stdout
    assert f"{stages} pipeline stages" in report, report
    cache_bytes = et_config["ctx_len"] * et_config["hidden"] * 4
    moved = channel_bytes(report)
    assert moved and max(moved) < cache_bytes, report
    out = workdir / f"pipeline-out-{stages}"
    runner_generation_matches_pytorch(emulator, et_model, et_config, program, stages, out)


def test_efficient_transformers_session_over_two_pipeline_stages(emulator, et_model, et_config, workdir):
    """efficient-transformers' command line (the cache float16 on the device) with
    -mdp-pipeline-stages=2, driven by its session calls given device_ids [0, 1]: PyTorch's
    tokens."""
    program = workdir / "pipeline-et"
    compile_program(BIN / "qaic-exec", et_model / "decoder.onnx", program, "-mdp-pipeline-stages=2",
                    *efficient_transformers_flags(et_model))
    env = python_environment(BUILD, emulator.env(PYTHONPATH=BUILD / "python"))
    env["PYTHONPATH"] += f":{SOURCE / 'tests/support'}"
    result = run(["/usr/bin/python3", "-c", SESSION_LOOP, program, et_model / "config.json", "vendor", "0,1"], env=env)
    tokens = json.loads(result.stdout.splitlines()[-1])["tokens"]
    assert tokens == et_config["tokens"], f"tokens {tokens}, PyTorch's {et_config['tokens']}"
