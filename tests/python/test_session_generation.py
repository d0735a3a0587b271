# SPDX-License-Identifier: Apache-2.0
"""qaic.Session as a generation loop on a real qaic-emu: examples/llm's decoder (exported once into
the build tree, PyTorch's greedy generation beside it) compiled with -retained-state and
-network-specialization-config, driven by Session.run one step at a time, the KV cache staying on
the device. Tokens must equal PyTorch's and every step's logits be within 1e-4 * max|torch|;
reset_state, activations and the README's generation example are checked on the same program."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import qaic
from conftest import BUILD, SOURCE, compile_ir, relu_ir



def torch_logits(model, step):
    return np.fromfile(model / "reference" / f"step{step}" / "logits.raw", dtype=np.float32)


def steps(session, prompt, count, activation=None):
    """Greedy generation through Session.run: yields (token, logits) per step, prefill first."""
    ids = np.array([prompt], dtype=np.int64)
    positions = np.arange(len(prompt), dtype=np.int64)[None, :]
    for _ in range(count):
        logits = session.run({"input_ids": ids, "position_ids": positions}, activation=activation)["logits"]
        token = int(logits.reshape(-1).argmax())
        yield token, logits.copy()
        ids = np.array([[token]], dtype=np.int64)
        positions = positions[:, -1:] + 1


def generate(session, prompt, count, activation=None):
    results = list(steps(session, prompt, count, activation))
    return [token for token, _ in results], [logits for _, logits in results]


def assert_matches_pytorch(model, config, tokens, logits):
    assert tokens == config["tokens"], f"tokens {tokens}, PyTorch's {config['tokens']}"
    for step, got in enumerate(logits):
        want = torch_logits(model, step)
        assert got.size == want.size, f"step {step}: logits of {got.shape}, PyTorch's {want.size} values"
        error = float(np.max(np.abs(got.reshape(-1) - want)))
        bound = 1e-4 * float(np.max(np.abs(want)))
        assert error <= bound, f"step {step}: max |got - torch| = {error:.3g} > 1e-4 * max|torch| = {bound:.3g}"


def test_the_session_shows_only_the_users_buffers(emulator, decoder_program, config):
    session = qaic.Session(decoder_program, set_size=2)
    names = [f"past_{kind}.{layer}" for layer in range(config["layers"]) for kind in ("key", "value")]
    assert sorted(session.retained_state) == sorted(names)
    assert set(session.model_input_shape_dict()) == {"input_ids", "position_ids"}
    assert set(session.model_output_shape_dict()) == {"logits"}
    assert session.model_input_shape_dict()["input_ids"][1] == np.int64
    prefill, decode = config["prefill_len"], 1
    assert [s["input_ids"] for s in session.specializations] == [(1, prefill), (1, decode)]
    assert [s["logits"] for s in session.specializations] == [(1, 1, config["vocab"])] * 2


def test_greedy_generation_through_session_run_matches_pytorch(emulator, decoder_program, decoder, config):
    session = qaic.Session(decoder_program, set_size=2)
    tokens, logits = generate(session, config["prompt"], config["generate"])
    assert logits[0].shape == (1, 1, config["vocab"])  # the prefill's dims chose the prefill program
    assert_matches_pytorch(decoder, config, tokens, logits)
    # A new sequence on the same activation after reset_state: the same tokens and logits.
    session.reset_state()
    again_tokens, again_logits = generate(session, config["prompt"], config["generate"])
    assert_matches_pytorch(decoder, config, again_tokens, again_logits)


def probe_step(config):
    """A decode step at position p: it attends to the cache at 0..p, which a generation of four
    steps has written (positions 0..p) and a reset or fresh activation holds as zeros."""
    position, token = config["prefill_len"] + 2, config["tokens"][0]
    return {"input_ids": np.array([[token]], dtype=np.int64), "position_ids": np.array([[position]], dtype=np.int64)}


def on_zeros(program, config):
    with qaic.Session(program, set_size=1) as fresh:
        return fresh.run(probe_step(config))["logits"]


def test_reset_state_zeroes_the_cache_the_next_step_reads(emulator, decoder_program, config):
    step, zeros = probe_step(config), on_zeros(decoder_program, config)
    session = qaic.Session(decoder_program, set_size=1)
    generate(session, config["prompt"], 4)
    on_sequence = session.run(step)["logits"]
    assert not np.allclose(on_sequence, zeros), "the step did not read the sequence's cache"
    generate(session, config["prompt"], 4)
    session.reset_state(0)
    np.testing.assert_array_equal(session.run(step)["logits"], zeros)


def test_two_activations_keep_two_independent_sequences(emulator, decoder_program, decoder, config):
    """Two sequences interleaved step by step, one per activation: the first still equals PyTorch's
    generation, the second equals itself run alone, so neither wrote the other's cache."""
    other_prompt = list(reversed(config["prompt"]))
    with qaic.Session(decoder_program, set_size=1) as alone:
        other_alone = generate(alone, other_prompt, config["generate"])[0]
    assert other_alone != config["tokens"]
    session = qaic.Session(decoder_program, num_activations=2, set_size=2)
    first, second = [], []
    for (token_a, logits_a), (token_b, _) in zip(steps(session, config["prompt"], config["generate"], activation=0),
                                                 steps(session, other_prompt, config["generate"], activation=1)):
        first.append((token_a, logits_a))
        second.append(token_b)
    assert_matches_pytorch(decoder, config, [t for t, _ in first], [l for _, l in first])
    assert second == other_alone
    # Resetting one activation zeroes its cache only.
    zeros = on_zeros(decoder_program, config)
    session.reset_state(activation=1)
    np.testing.assert_array_equal(session.run(probe_step(config), activation=1)["logits"], zeros)
    assert not np.allclose(session.run(probe_step(config), activation=0)["logits"], zeros)


def test_a_retained_state_program_with_activations_needs_one_named(emulator, decoder_program, config):
    session = qaic.Session(decoder_program, num_activations=2, set_size=1)
    inputs = {"input_ids": np.array([config["prompt"]], dtype=np.int64),
              "position_ids": np.arange(config["prefill_len"], dtype=np.int64)[None, :]}
    with pytest.raises(ValueError, match="activation=k"):
        session.run(inputs)
    # The last: an array whose repr raises SystemError (found by fuzz_python_args); named by type.
    unprintable = np.frombuffer((0x110000).to_bytes(4, "little"), "U1")
    for bad in (2, -1, "0", True, unprintable):
        with pytest.raises(ValueError, match=r"activations 0\.\.1"):
            session.run(inputs, activation=bad)
        with pytest.raises(ValueError, match=r"activations 0\.\.1"):
            session.reset_state(bad)
    assert session.run(inputs, activation=np.int64(1))["logits"].shape == (1, 1, config["vocab"])


def test_a_program_without_retained_state_says_so(emulator, workdir):
    session = qaic.Session(compile_ir(workdir, "relu8", relu_ir([1, 8])), num_activations=2, set_size=1)
    assert session.retained_state == [] and session.specializations == []
    x = np.arange(8, dtype=np.float32).reshape(1, 8) - 4
    np.testing.assert_array_equal(session.run({"x": x})["y"], np.maximum(x, 0))  # any activation will do
    np.testing.assert_array_equal(session.run({"x": x}, activation=1)["y"], np.maximum(x, 0))
    with pytest.raises(ValueError, match="retains no state"):
        session.reset_state()


def readme_generation_example():
    text = (SOURCE / "README.md").read_text()
    section = text[text.index("## Generating text (LLM)"):]
    section = section[:section.index("\n## ", 1)]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_generation_example_runs_as_written(emulator, decoder_program, decoder, config, tmp_path):
    """The README's loop, run in a tree laid out as its shell commands leave it (build/llm)."""
    example = readme_generation_example()
    assert len(example.strip().splitlines()) <= 12
    (tmp_path / "build/llm").mkdir(parents=True)
    shutil.copy(decoder / "config.json", tmp_path / "build/llm/config.json")
    shutil.copytree(decoder_program, tmp_path / "build/llm/qpc")
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), QAIC_ROOT=str(emulator.root))
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    printed = [int(t) for t in result.stdout.split()]
    assert printed and printed == config["tokens"][:len(printed)], result.stdout
