# SPDX-License-Identifier: Apache-2.0
"""Retained state and network specializations on a real qaic-emu: a small decoder in the
efficient-transformers convention (input_ids, position_ids, past_key.<i> / past_value.<i> and their
_RetainedState outputs), exported by PyTorch with symbolic dims, compiled with -retained-state and
-network-specialization-config, run prefill then decode from one program, compared with PyTorch."""
import json
import math

import numpy as np
import pytest

import qaicrt
from conftest import BIN, compile_program, run

torch = pytest.importorskip("torch")  # Debian's python3-torch; the suite runs /usr/bin/python3

VOCAB, HEADS, HEAD_DIM, LAYERS, CTX, PREFILL = 24, 2, 4, 2, 8, 4


class TinyDecoder(torch.nn.Module):
    """Writes the new keys and values into the cache at position_ids and masks attention from them."""

    def __init__(self):
        super().__init__()
        hidden = HEADS * HEAD_DIM
        self.embed = torch.nn.Embedding(VOCAB, hidden)
        self.qkv = torch.nn.ModuleList([torch.nn.Linear(hidden, 3 * hidden) for _ in range(LAYERS)])
        self.out = torch.nn.Linear(hidden, VOCAB)

    def forward(self, input_ids, position_ids, *past):
        batch, length = input_ids.shape
        # A constant folded from the shapes, different in each specialization's program.
        x = self.embed(input_ids) + 0.01 * torch.arange(length, dtype=torch.float32)[None, :, None]
        states = []
        for layer in range(LAYERS):
            q, k, v = self.qkv[layer](x).split(HEADS * HEAD_DIM, dim=-1)
            q, k, v = (t.reshape(batch, length, HEADS, HEAD_DIM).transpose(1, 2) for t in (q, k, v))
            index = position_ids[:, None, :, None].expand(batch, HEADS, length, HEAD_DIM)
            keys = past[2 * layer].scatter(2, index, k)
            values = past[2 * layer + 1].scatter(2, index, v)
            scores = q @ keys.transpose(2, 3) / math.sqrt(HEAD_DIM)
            positions = torch.arange(keys.shape[2])[None, None, None, :]
            scores = scores.masked_fill(positions > position_ids[:, None, :, None], -1e4)
            x = x + (scores.softmax(-1) @ values).transpose(1, 2).reshape(batch, length, HEADS * HEAD_DIM)
            states += [keys, values]
        return (self.out(x), *states)


def state_names():
    return [f"past_{kind}.{layer}" for layer in range(LAYERS) for kind in ("key", "value")]


@pytest.fixture(scope="module")
def decoder(workdir):
    torch.manual_seed(19)
    model = TinyDecoder().eval()
    path = workdir / "decoder.onnx"
    cache = torch.zeros(1, HEADS, CTX, HEAD_DIM)
    names = state_names()
    dynamic = {"input_ids": {0: "batch_size", 1: "seq_len"}, "position_ids": {0: "batch_size", 1: "seq_len"}}
    dynamic.update({n: {0: "batch_size", 2: "ctx_len"} for n in names})
    dynamic["logits"] = {0: "batch_size", 1: "seq_len"}
    with torch.no_grad():
        torch.onnx.export(model, (torch.zeros(1, 2, dtype=torch.int64), torch.zeros(1, 2, dtype=torch.int64),
                                  *[cache] * len(names)), str(path),
                          input_names=["input_ids", "position_ids", *names],
                          output_names=["logits", *[n + "_RetainedState" for n in names]],
                          dynamic_axes=dynamic, opset_version=13)
    return model, path


@pytest.fixture(scope="module")
def specializations(workdir):
    path = workdir / "specializations.json"
    path.write_text(json.dumps({"specializations": [
        {"batch_size": "1", "seq_len": str(PREFILL), "ctx_len": str(CTX)},
        {"batch_size": "1", "seq_len": "1", "ctx_len": str(CTX)}]}))
    return path


@pytest.fixture(scope="module")
def program(workdir, decoder, specializations):
    out = workdir / "decoder-qpc"
    result = compile_program(BIN / "qaic-exec", decoder[1], out, "-retained-state",
                             f"-network-specialization-config={specializations}")
    assert "4 retained-state pairs, 2 specializations" in result.stdout
    return out


class TorchSequence:
    """PyTorch's own decoding with its KV cache: the reference for one activation."""

    def __init__(self, model):
        self.model = model
        self.cache = [torch.zeros(1, HEADS, CTX, HEAD_DIM) for _ in state_names()]

    def step(self, tokens, start):
        ids = torch.tensor([tokens], dtype=torch.int64)
        positions = torch.arange(start, start + len(tokens), dtype=torch.int64)[None, :]
        with torch.no_grad():
            logits, *self.cache = self.model(ids, positions, *self.cache)
        return logits.numpy()


class DeviceSequences:
    """Inferences on the program, each on a chosen activation, with the specialization picked by dims."""

    def __init__(self, program, activations):
        self.context = qaicrt.Context([0])
        self.qpc = qaicrt.Qpc(str(program))
        self.set = qaicrt.InferenceSet(self.context, self.qpc, 0, 1, activations)
        self.next_id = 1

    def step(self, activation, tokens, start, expect=qaicrt.QS_SUCCESS):
        status, handle = self.set.getAvailableOnActivation(activation, 10_000_000)
        assert status == qaicrt.QS_SUCCESS and handle.getActivationIndex() == activation
        ids = np.array([tokens], dtype=np.int64)
        positions = np.arange(start, start + len(tokens), dtype=np.int64)[None, :]
        logits = np.zeros((1, PREFILL, VOCAB), dtype=np.float32)
        handle.setBuffers([ids, positions, logits])
        handle.setBufferDims(0, [1, len(tokens)])  # the inputs' dims select the specialization;
        handle.setBufferDims(1, [1, len(tokens)])  # logits takes that specialization's dims
        request = self.next_id
        self.next_id += 1
        self.set.submit(handle, request)
        status, done = self.set.getCompletedId(request, 30_000_000)
        message = done.getErrorMessage()
        if status == qaicrt.QS_SUCCESS:
            assert list(done.getOutputDims(2)) == [1, len(tokens), VOCAB]
        self.set.putCompleted(done)
        assert status == expect, message
        return logits[:, :len(tokens)] if status == qaicrt.QS_SUCCESS else message


def close(device, reference):
    return np.max(np.abs(device - reference)) <= 1e-4 * max(1.0, np.max(np.abs(reference)))


def test_retained_buffers_are_not_mapped_and_qaic_util_lists_them(program):
    mappings = qaicrt.Qpc(str(program)).getBufferMappingsV2()
    assert [m.bufferName for m in mappings] == ["input_ids", "position_ids", "logits"]
    # Two allowed combinations: prefill (the default, every buffer at its largest) and decode.
    assert [list(d) for d in mappings[0].ioShapes.allowedDims] == [[1, PREFILL], [1, 1]]
    listing = run([BIN / "qaic-util", f"--qpc={program}"]).stdout
    assert "\tFormat Version:2\n" in listing and "\tRetained State:4\n" in listing
    for name in state_names():
        assert f"\tName:{name}\n\tState Name:{name}_RetainedState\n" in listing
    assert f"\tDims:[1,{HEADS},{CTX},{HEAD_DIM}]\n" in listing
    assert "Combination 1: program 0 compiled for it" in listing


def test_the_cache_is_not_in_the_io_region_whatever_ctx_len(workdir, program, decoder):
    """What a request moves over the DBC is the IO region's buffers: with an eight times longer
    context the region, and so every request's transfers, stay the same."""
    longer = workdir / "long-context.json"
    longer.write_text(json.dumps({"specializations": [{"batch_size": "1", "seq_len": str(PREFILL), "ctx_len": "64"},
                                                      {"batch_size": "1", "seq_len": "1", "ctx_len": "64"}]}))
    out = workdir / "decoder-long"
    compile_program(BIN / "qaic-exec", decoder[1], out, "-retained-state",
                    f"-network-specialization-config={longer}")

    def region(qpc):
        text = run([BIN / "qaic-util", f"--qpc={qpc}"]).stdout
        return [line for line in text.splitlines() if "IO Region Size" in line or "Device Size" in line]
    assert region(out) == region(program)
    assert f"\tDims:[1,{HEADS},64,{HEAD_DIM}]\n" in run([BIN / "qaic-util", f"--qpc={out}"]).stdout


def test_prefill_then_decode_from_one_program_equals_pytorch(emulator, program, decoder):
    device, reference = DeviceSequences(program, 1), TorchSequence(decoder[0])
    prompt = [3, 7, 1, 20]
    assert close(device.step(0, prompt, 0), reference.step(prompt, 0))
    token = int(np.argmax(reference.step([5], PREFILL)[0, -1]))  # compare every decode step
    device_logits = device.step(0, [5], PREFILL)
    for position in range(PREFILL + 1, CTX):
        expected = reference.step([token], position)
        got = device.step(0, [token], position)
        assert close(got, expected), f"position {position}"
        token = int(np.argmax(expected[0, -1]))
    assert device_logits.shape == (1, 1, VOCAB)


def test_state_starts_at_zero_is_per_activation_and_reset_drops_it(emulator, program, decoder):
    device = DeviceSequences(program, 2)
    fresh = TorchSequence(decoder[0]).step([9], 2)  # positions 0 and 1 of a zero cache
    history = TorchSequence(decoder[0])
    history.step([1, 2, 3, 4], 0)
    after_prompt = history.step([9], 4)
    assert not close(fresh, after_prompt)  # the cache changes the answer
    assert close(device.step(0, [1, 2, 3, 4], 0), TorchSequence(decoder[0]).step([1, 2, 3, 4], 0))
    assert close(device.step(0, [9], 4), after_prompt)  # state carried across inferences of activation 0
    assert close(device.step(1, [9], 2), fresh)  # activation 1 never saw the prompt: zeros
    device.set.resetRetainedState(0)
    assert close(device.step(0, [9], 2), fresh)  # the reset zeroed activation 0's state
    assert close(device.step(0, [9], 2), fresh)  # (position 2 rewritten with the same values)
    with pytest.raises(qaicrt.Error):
        device.set.resetRetainedState(2)
    with pytest.raises(qaicrt.Error):
        device.set.getAvailableOnActivation(2)
    # While activation 0's only handle is out, a wait for it times out; activation 1's is free.
    status, held = device.set.getAvailableOnActivation(0, 1_000_000)
    assert status == qaicrt.QS_SUCCESS
    assert device.set.getAvailableOnActivation(0, 50_000) == (qaicrt.QS_TIMEDOUT, None)
    status, other = device.set.getAvailableOnActivation(1, 1_000_000)
    assert status == qaicrt.QS_SUCCESS and other.getActivationIndex() == 1
    device.set.putCompleted(other)
    device.set.putCompleted(held)


def test_deactivation_drops_the_state(emulator, program, decoder):
    fresh = TorchSequence(decoder[0]).step([9], 2)
    device = DeviceSequences(program, 1)
    device.step(0, [1, 2, 3, 4], 0)
    assert not close(device.step(0, [9], 2), fresh)
    del device  # the set and its activation go
    again = DeviceSequences(program, 1)
    assert close(again.step(0, [9], 2), fresh)


def test_a_device_reset_drops_the_state(emulator, program, decoder):
    fresh = TorchSequence(decoder[0]).step([9], 2)
    device = DeviceSequences(program, 1)
    device.step(0, [1, 2, 3, 4], 0)
    (emulator.root / "sys/class/accel/accel0/qaic-emu/fault/reset").write_text("1")
    after = DeviceSequences(program, 1)  # the reset took the old set's activation
    assert close(after.step(0, [9], 2), fresh)


def test_position_beyond_ctx_len_fails_that_inference_only(emulator, program, decoder):
    device = DeviceSequences(program, 2)
    other = TorchSequence(decoder[0])
    assert close(device.step(1, [4, 4, 2, 2], 0), other.step([4, 4, 2, 2], 0))
    device.step(0, [1, 2, 3, 4], 0)
    message = device.step(0, [6], CTX, expect=qaicrt.QS_DEVICE_ERROR)
    assert "scatter" in message and str(CTX) in message, message
    assert close(device.step(1, [8], 4), other.step([8], 4))  # the other activation's state is intact
    mine = TorchSequence(decoder[0])
    mine.step([1, 2, 3, 4], 0)
    assert close(device.step(0, [6], 4), mine.step([6], 4))  # and the failed one's too


def test_dims_that_select_no_specialization_are_refused_naming_the_buffer(emulator, program):
    device = DeviceSequences(program, 1)
    status, handle = device.set.getAvailable(10_000_000)
    handle.setBuffers([np.zeros((1, PREFILL), np.int64), np.zeros((1, PREFILL), np.int64),
                       np.zeros((1, PREFILL, VOCAB), np.float32)])
    handle.setBufferDims(0, [1, 3])
    handle.setBufferDims(1, [1, 3])
    with pytest.raises(qaicrt.Error) as raised:
        device.set.submit(handle, 1)
    assert "input_ids" in str(raised.value)
    device.set.putCompleted(handle)


def compile_error(workdir, model, *flags):
    result = compile_program(BIN / "qaic-exec", model, workdir / "bad", *flags, check=False)
    assert result.returncode == 2 and not (workdir / "bad/programqpc.bin").exists(), result.stderr
    return result.stderr


def test_compile_errors_name_the_pair_the_entry_and_the_field(workdir, decoder, specializations):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Cast", ["cache"], ["cache_RetainedState"], to=TensorProto.INT32)], "mismatch",
        [helper.make_tensor_value_info("cache", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("cache_RetainedState", TensorProto.INT32, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = workdir / "mismatch.onnx"
    onnx.save(model, str(path))
    stderr = compile_error(workdir, path, "-retained-state")
    assert "'cache'" in stderr and "'cache_RetainedState'" in stderr and "differ" in stderr
    # The entry that leaves a symbol unbound is named with its values.
    partial = workdir / "partial.json"
    partial.write_text(json.dumps({"specializations": [{"batch_size": "1", "seq_len": "1"}]}))
    stderr = compile_error(workdir, decoder[1], "-retained-state", f"-network-specialization-config={partial}")
    assert "specialization 0 (batch_size=1, seq_len=1)" in stderr and "ctx_len" in stderr
    broken = workdir / "broken.json"
    broken.write_text('{"specializations": [{"seq_len": "one"}]}')
    stderr = compile_error(workdir, decoder[1], f"-network-specialization-config={broken}")
    assert "specializations[0].seq_len" in stderr and str(broken) in stderr
