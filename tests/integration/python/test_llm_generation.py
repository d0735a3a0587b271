# SPDX-License-Identifier: Apache-2.0
"""Greedy generation on the emulated card equals PyTorch's: examples/llm/export_decoder.py exports
a small decoder and runs PyTorch's own greedy generation; the decoder is compiled with qaic-exec
and run on a real qaic-emu by llm-generate (the example program) and by qaic-runner from batch
JSONs. Tokens must be equal, and every step's logits within 1e-4 * max|torch|."""
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
from llm_export import SMALL_DECODER, exported_decoder  # noqa: E402
from qaic_processes import compile_program, run  # noqa: E402

BIN = BUILD / "bin"
MODEL_ARGS = SMALL_DECODER


def exported_model(args=MODEL_ARGS):
    return exported_decoder(BUILD, SOURCE, args)


@pytest.fixture(scope="module")
def model():
    return exported_model()


@pytest.fixture(scope="module")
def config(model):
    return json.loads((model / "config.json").read_text())


def compile_static(model, config, out, seq_len):
    """One program with every symbolic dim bound: the KV cache is ordinary input and output."""
    compile_program(BIN / "qaic-exec", model / "decoder.onnx", out,
                    "-onnx-define-symbol=batch_size,1", f"-onnx-define-symbol=seq_len,{seq_len}",
                    f"-onnx-define-symbol=ctx_len,{config['ctx_len']}")
    return out


@pytest.fixture(scope="module")
def static_programs(model, config, workdir):
    return (compile_static(model, config, workdir / "prefill", config["prefill_len"]),
            compile_static(model, config, workdir / "decode", 1))


def torch_logits(model, step):
    return numpy.fromfile(model / "reference" / f"step{step}" / "logits.raw", dtype=numpy.float32)


def assert_close_to_torch(got, want, what):
    assert got.shape == want.shape, f"{what}: {got.shape} elements, PyTorch's {want.shape}"
    error = float(numpy.max(numpy.abs(got - want)))
    bound = 1e-4 * float(numpy.max(numpy.abs(want)))
    assert error <= bound, f"{what}: max |got - torch| = {error:.3g} > 1e-4 * max|torch| = {bound:.3g}"


def generate(emulator, programs, config, logits_dir, tokens=None):
    logits_dir.mkdir(parents=True, exist_ok=True)
    result = run([BIN / "llm-generate", "--prompt", ",".join(map(str, config["prompt"])),
                  "--tokens", str(tokens or config["generate"]), "--logits-dir", logits_dir, *programs],
                 env=emulator.env())
    lines = result.stdout.splitlines()
    assert lines[1].startswith("prefill: ") and lines[2].startswith("decode: "), result.stdout
    assert "tokens/s" in lines[2], result.stdout
    return [int(t) for t in lines[0].split()]


def check_generation(model, config, tokens, logits_dir):
    assert tokens == config["tokens"], f"tokens {tokens}, PyTorch's {config['tokens']}"
    for step in range(config["generate"]):
        got = numpy.fromfile(logits_dir / f"logits-{step}.bin", dtype=numpy.float32)
        assert_close_to_torch(got, torch_logits(model, step), f"logits of step {step}")


def test_reference_is_greedy_over_its_own_logits(model, config):
    """The reference the other tests compare with: each token is the argmax of its step's logits,
    and the tokens are not all one value (a broken model would repeat one)."""
    tokens = [int(numpy.argmax(torch_logits(model, step))) for step in range(config["generate"])]
    assert tokens == config["tokens"]
    assert len(set(tokens)) > 1


def test_llm_generate_prefill_and_decode_programs_match_pytorch(emulator, model, config, static_programs, workdir):
    logits = workdir / "two-programs"
    check_generation(model, config, generate(emulator, static_programs, config, logits), logits)


def test_llm_generate_matches_pytorch_with_the_cache_written_by_scatter_nd(emulator, workdir):
    """The same decoder exported with index_put (ScatterND, as the vendor's CtxScatter lowers)."""
    model = exported_model(MODEL_ARGS + ["--cache-write", "scatter_nd"])
    config = json.loads((model / "config.json").read_text())
    operators = {node.op_type for node in onnx.load(str(model / "decoder.onnx")).graph.node}
    assert "ScatterND" in operators and "ScatterElements" not in operators
    programs = (compile_static(model, config, workdir / "nd-prefill", config["prefill_len"]),
                compile_static(model, config, workdir / "nd-decode", 1))
    logits = workdir / "nd-logits"
    check_generation(model, config, generate(emulator, programs, config, logits), logits)


def test_llm_generate_prompt_token_by_token_matches_pytorch(emulator, model, config, static_programs, workdir):
    """Only a seq_len 1 program: the prompt goes in one token at a time, the same tokens come out."""
    logits = workdir / "one-program"
    tokens = generate(emulator, [static_programs[1]], config, logits)
    assert tokens == config["tokens"]
    for step in range(1, config["generate"]):
        got = numpy.fromfile(logits / f"logits-{step}.bin", dtype=numpy.float32)
        assert_close_to_torch(got, torch_logits(model, step), f"logits of step {step}")


def test_llm_generate_refuses_a_prompt_the_prefill_program_does_not_take(emulator, config, static_programs):
    result = run([BIN / "llm-generate", "--prompt", "1,2", *static_programs], check=False, env=emulator.env())
    assert result.returncode == 2, result.stderr
    assert "the prompt has 2 tokens" in result.stderr and str(static_programs[0]) in result.stderr


def test_llm_generate_refuses_a_program_of_another_batch_size(emulator, model, config, workdir):
    program = workdir / "batch2"
    compile_program(BIN / "qaic-exec", model / "decoder.onnx", program,
                    "-onnx-define-symbol=batch_size,2", "-onnx-define-symbol=seq_len,1",
                    f"-onnx-define-symbol=ctx_len,{config['ctx_len']}")
    result = run([BIN / "llm-generate", "--prompt", "1,2", program], check=False, env=emulator.env())
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{program}: buffer 'input_ids' has batch size 2" in result.stderr


def runner(emulator, program, batch_json, *extra):
    return run([BIN / "qaic-runner", "-t", program, "--aic-batch-json-input", batch_json, *extra],
               check=False, env=emulator.env())


def test_qaic_runner_drives_the_generation_in_order(emulator, model, config, static_programs, workdir):
    """IO set 0 is the prefill (its own program while the cache travels in the IO), then one IO set
    per decode step; -S 1 -T 1 -a 1 keeps the JSON's order, -c checks each step against PyTorch's
    files and --write-output-dir writes each step's outputs."""
    prefill, decode = static_programs
    checked = runner(emulator, prefill, model / "prefill.json", "-n", "1", "-S", "1", "-T", "1", "-a", "1", "-c")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Output check passed: 1 inferences" in checked.stdout
    steps = config["generate"] - 1
    out = workdir / "runner-out"
    decoded = runner(emulator, decode, model / "decode.json", "-n", str(steps), "-S", "1", "-T", "1", "-a", "1",
                     "-c", "--write-output-dir", out, "--write-output-num-samples", str(steps))
    assert decoded.returncode == 0, decoded.stdout + decoded.stderr
    assert f"Output check passed: {steps} inferences" in decoded.stdout
    for step in range(1, config["generate"]):
        got = numpy.fromfile(out / f"logits-inf-{step - 1}.bin", dtype=numpy.float32)
        assert_close_to_torch(got, torch_logits(model, step), f"runner's logits of step {step}")
        assert int(numpy.argmax(got)) == config["tokens"][step]


def test_qaic_runner_check_fails_on_a_step_out_of_order(emulator, model, config, static_programs, workdir):
    """The check is real: decode steps given each other's expected outputs fail -c (exit 3)."""
    batch = json.loads((model / "decode.json").read_text())
    for entry_a, entry_b in zip(batch["IO-files"][0], batch["IO-files"][1]):
        if entry_a["io-direction"] == "out":
            entry_a["path"], entry_b["path"] = entry_b["path"], entry_a["path"]
    swapped = model / f"decode-swapped-{os.getpid()}.json"
    swapped.write_text(json.dumps(batch))
    try:
        result = runner(emulator, static_programs[1], swapped, "-n", "2", "-S", "1", "-T", "1", "-c")
    finally:
        swapped.unlink()
    assert result.returncode == 3, result.stdout + result.stderr


def test_the_readme_llm_example_runs_as_written(emulator, workdir):
    """The README's block, in a directory where build/ is this build and examples/ the source's."""
    readme = (SOURCE / "README.md").read_text()
    section = readme[readme.index("## Generating text (LLM)"):]
    block = section[section.index("```\n") + 4:section.index("```", section.index("```\n") + 4)]
    directory = workdir / "readme"
    (directory / "build").mkdir(parents=True)
    (directory / "build" / "bin").symlink_to(BIN)
    (directory / "examples").symlink_to(SOURCE / "examples")
    result = run(["bash", "-euc", block], cwd=directory, env=emulator.env())
    config = json.loads((directory / "build/llm/config.json").read_text())
    lines = result.stdout.splitlines()
    assert [int(t) for t in lines[-3].split()] == config["tokens"], result.stdout
    assert lines[-1].startswith("decode: 7 tokens in "), result.stdout


# One program, compiled with -retained-state and the exporter's specializations: the KV cache
# stays in the activation's device memory and prefill and decode select their shapes by dims.


def compile_retained(model, out):
    compile_program(BIN / "qaic-exec", model / "decoder.onnx", out, "-retained-state",
                    f"-network-specialization-config={model / 'specializations.json'}")
    return out


@pytest.fixture(scope="module")
def retained_program(model, workdir):
    return compile_retained(model, workdir / "retained")


def user_io_bytes_per_decode_step(config):
    """The bounds of a decode step's user IO: one row of float logits out, and at most one int64
    each of input_ids and position_ids in (the device may take them narrower)."""
    return 4 * config["vocab"], 4 * config["vocab"] + 2 * 8


def test_llm_generate_retained_specialized_program_matches_pytorch(emulator, model, config, retained_program, workdir):
    logits = workdir / "retained-logits"
    tokens = generate(emulator, [retained_program], config, logits)
    check_generation(model, config, tokens, logits)


def decode_bytes(emulator, program, config):
    result = run([BIN / "llm-generate", "--prompt", ",".join(map(str, config["prompt"])), "--tokens", "4", *program],
                 env=emulator.env())
    line = result.stdout.splitlines()[2]
    return int(line.split(", ")[-1].split()[0])


def test_bytes_per_decode_step_are_the_users_io_and_do_not_grow_with_ctx_len(emulator, config, retained_program,
                                                                             static_programs, workdir):
    """With retained state a decode step moves input_ids, position_ids and the logits, whatever
    ctx_len is; with the cache in the IO (static programs) it moves the cache, which grows."""
    wider_args = list(MODEL_ARGS)
    wider_args[wider_args.index("--ctx-len") + 1] = str(2 * config["ctx_len"])
    wider = exported_model(wider_args)
    wider_config = json.loads((wider / "config.json").read_text())
    assert wider_config["ctx_len"] == 2 * config["ctx_len"]
    wider_program = compile_retained(wider, workdir / "retained-wider")
    retained = decode_bytes(emulator, [retained_program], config)
    low, high = user_io_bytes_per_decode_step(config)
    assert low < retained <= high
    assert decode_bytes(emulator, [wider_program], wider_config) == retained
    # The same measure sees the cache when it does cross: the check can fail.
    wider_static = (compile_static(wider, wider_config, workdir / "wider-prefill", wider_config["prefill_len"]),
                    compile_static(wider, wider_config, workdir / "wider-decode", 1))
    assert decode_bytes(emulator, wider_static, wider_config) > decode_bytes(emulator, static_programs, config) > retained


def test_efficient_transformers_compile_command_keeps_the_cache_in_float16(emulator, model, config, workdir):
    """The command efficient-transformers runs: -custom-IO-list-file lists every past_key.N /
    past_value.N and its _RetainedState as float16 (with -convert-to-fp16, -retained-state, the
    specializations and its hardware flags). The retained cache is then float16, half the bytes,
    and greedy generation still gives PyTorch's tokens, its logits within float16's rounding.
    Its -mxfp6-matmul is left out here (MXFP6 weights: the test below), so that the cache's
    precision is what is measured."""
    custom_io = workdir / "custom_io_fp16.yaml"
    write_float16_cache_list(custom_io, config)
    program = workdir / "custom-io"
    compile_program(BIN / "qaic-exec", model / "decoder.onnx", program, *efficient_transformers_flags(model, custom_io))
    listing = run([BIN / "qaic-util", "--qpc", program]).stdout
    cache_bytes = 2 * config["heads"] * config["ctx_len"] * (config["hidden"] // config["heads"])  # float16
    states = listing.split("Retained State ")[1:]
    assert len(states) == 2 * config["layers"], listing
    for state in states:
        assert "Type:TL_FLOAT16" in state and f"Size:{cache_bytes}" in state, state
    logits = workdir / "custom-io-logits"
    tokens = generate(emulator, [program], config, logits)
    assert tokens == config["tokens"], f"tokens {tokens}, PyTorch's {config['tokens']}"
    for step in range(config["generate"]):
        got = numpy.fromfile(logits / f"logits-{step}.bin", dtype=numpy.float32)
        want = torch_logits(model, step)
        assert numpy.max(numpy.abs(got - want)) <= 1e-2 * numpy.max(numpy.abs(want)), f"logits of step {step}"


def test_efficient_transformers_compile_command_with_mxfp6_weights(emulator, model, config, workdir):
    """The same command with its -mxfp6-matmul: every MatMul weight is stored MXFP6-E2M3
    (docs/formats/mxfp6.md) and the card computes with the rounded weights. PyTorch's reference
    here has the unrounded weights, so the logits agree within the rounding's effect (measured:
    3% to 4% of max |logit| on this random decoder; bound 10%) on every step whose context is
    still PyTorch's: up to and including the first token that differs."""
    custom_io = workdir / "custom_io_fp16_mx.yaml"
    write_float16_cache_list(custom_io, config)
    program = workdir / "custom-io-mxfp6"
    compile_program(BIN / "qaic-exec", model / "decoder.onnx", program,
                    *efficient_transformers_flags(model, custom_io), "-mxfp6-matmul")
    listing = run([BIN / "qaic-util", "--qpc", program]).stdout
    constants = listing.split("Constant ")[1:]
    encoded = [c for c in constants if "Encoding:mxfp6-e2m3" in c]
    assert encoded and all("Dims:[" in c for c in encoded), listing
    assert len(encoded) >= 4 * config["layers"], f"{len(encoded)} encoded constants:\n{listing}"
    logits = workdir / "custom-io-mxfp6-logits"
    tokens = generate(emulator, [program], config, logits)
    for step in range(config["generate"]):
        got = numpy.fromfile(logits / f"logits-{step}.bin", dtype=numpy.float32)
        want = torch_logits(model, step)
        error = numpy.max(numpy.abs(got - want)) / numpy.max(numpy.abs(want))
        assert error <= 0.1, f"logits of step {step}: max |got - torch| = {error:.3g} of max |torch|"
        assert error > 1e-3 or step > 0, "the MXFP6-rounded weights must show in the logits"
        if tokens[step] != config["tokens"][step]:
            break


def write_float16_cache_list(path, config):
    with path.open("w") as out:
        out.write("# Model Inputs\n\n")
        for layer in range(config["layers"]):
            for kind in ("key", "value"):
                for name in (f"past_{kind}.{layer}", f"past_{kind}.{layer}_RetainedState"):
                    out.write(f" - IOName: {name}\n   Precision: float16\n\n")


def efficient_transformers_flags(model, custom_io):
    return ("-aic-hw", "-aic-hw-version=2.0", f"-network-specialization-config={model / 'specializations.json'}",
            "-convert-to-fp16", "-retained-state", "-aic-num-cores=2", f"-custom-IO-list-file={custom_io}",
            "-compile-only", "-mos=1", "-aic-enable-depth-first")


def test_qaic_runner_drives_a_retained_generation_from_one_batch_json(emulator, model, config, retained_program,
                                                                      workdir):
    """generation.json: IO set 0 the prefill (dims select the prefill specialization), then one IO
    set per decode step; only the tokens and logits cross, the cache stays on the device."""
    steps = config["generate"]
    out = workdir / "retained-runner-out"
    result = runner(emulator, retained_program, model / "generation.json", "-n", str(steps), "-S", "1", "-T", "1",
                    "-a", "1", "-c", "--write-output-dir", out, "--write-output-num-samples", str(steps))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Output check passed: {steps} inferences" in result.stdout
    for step in range(steps):
        got = numpy.fromfile(out / f"logits-inf-{step}.bin", dtype=numpy.float32)
        assert_close_to_torch(got, torch_logits(model, step), f"runner's logits of step {step}")


def test_qaic_runner_retained_generation_depends_on_the_order(emulator, model, config, retained_program):
    """The state is carried from one inference to the next: the decode steps in reverse order
    (each IO set still with its own expected outputs) fail -c."""
    batch = json.loads((model / "generation.json").read_text())
    batch["IO-files"] = batch["IO-files"][:1] + batch["IO-files"][1:][::-1]
    reversed_json = model / f"generation-reversed-{os.getpid()}.json"
    reversed_json.write_text(json.dumps(batch))
    try:
        result = runner(emulator, retained_program, reversed_json, "-n", str(config["generate"]), "-S", "1", "-T", "1",
                        "-a", "1", "-c")
    finally:
        reversed_json.unlink()
    assert result.returncode == 3, result.stdout + result.stderr


def test_llm_generate_refuses_two_programs_that_each_retain_the_cache(emulator, model, config, retained_program,
                                                                      workdir):
    """Retained state belongs to one activation: a prefill and a decode program cannot share it."""
    prefill = workdir / "retained-prefill"
    compile_program(BIN / "qaic-exec", model / "decoder.onnx", prefill, "-retained-state",
                    "-onnx-define-symbol=batch_size,1", f"-onnx-define-symbol=seq_len,{config['prefill_len']}",
                    f"-onnx-define-symbol=ctx_len,{config['ctx_len']}")
    result = run([BIN / "llm-generate", "--prompt", ",".join(map(str, config["prompt"])), prefill, retained_program],
                 check=False, env=emulator.env())
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot share a cache retained on the device" in result.stderr


def test_qaic_runner_refuses_a_batch_json_that_selects_no_specialization(emulator, model, config, retained_program):
    """Issue 19 item 8: dims that match no specialization (here seq_len 2, between decode's 1 and
    the prefill's length) exit 2 naming the IO set and the buffer, before anything runs."""
    batch = json.loads((model / "generation.json").read_text())
    for entry in batch["IO-files"][1]:
        if entry["map-to"] in ("input_ids", "position_ids"):
            entry["dims"] = [1, 2]
    unmatched_json = model / f"generation-unmatched-{os.getpid()}.json"
    unmatched_json.write_text(json.dumps(batch))
    try:
        result = runner(emulator, retained_program, unmatched_json, "-n", str(config["generate"]), "-S", "1", "-T",
                        "1", "-a", "1")
    finally:
        unmatched_json.unlink()
    assert result.returncode == 2, result.stdout + result.stderr
    assert "IO set 1" in result.stderr and "input_ids" in result.stderr, result.stderr
