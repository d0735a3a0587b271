# SPDX-License-Identifier: Apache-2.0
"""The vendor's lower-level runtime API in qaicrt (Program, ExecObj, Queue, QIDList,
QAicProgramProperties, BufferDimensionsVecRef, InferenceVector) on a real qaic-emu, called the way
code written for the card calls it: buffers by binding index of the IO descriptor, read-only
output placeholders, size-0 buffers that skip retained state, dims that pick the specialization."""
import numpy as np
import pytest

import qaicrt
from vendor_session import OK, VendorStyleSession


# --- the small types ---------------------------------------------------------------------------

def test_qidlist_is_a_list_of_device_ids_that_context_takes(emulator):
    ids = qaicrt.QIDList([1, 0])
    assert ids == [1, 0] and isinstance(ids, list)
    ids.append(np.int64(1))
    assert ids[2] == 1 and type(ids[2]) is int
    with pytest.raises(TypeError):
        qaicrt.QIDList(["0"])
    with pytest.raises(TypeError):
        ids[0] = 1.5
    assert list(qaicrt.Context(qaicrt.QIDList([1])).getDevices()) == [1]
    assert list(qaicrt.Context([0]).getDevices()) == [0]


def test_set_log_level_returns_success(emulator):
    context = qaicrt.Context([0])
    assert context.setLogLevel(qaicrt.QLogLevel.QL_DEBUG) == qaicrt.QStatus.QS_SUCCESS
    assert context.getLogLevel() == qaicrt.QLogLevel.QL_DEBUG


def test_program_properties_take_the_vendors_names_and_dev_mapping_strings():
    p = qaicrt.QAicProgramProperties()
    p.dataPathTimeoutMs = 60_000
    assert p.dataPathTimeoutMs == 60_000
    p.SubmitRetryTimeoutMs = 30_000  # older callers' name for the same timeout
    assert (p.SubmitRetryTimeoutMs, p.dataPathTimeoutMs) == (30_000, 30_000)
    p.submitNumRetries = 2
    assert p.SubmitNumRetries == 2
    p.devMapping = "0:1"
    assert p.devMapping == "0:1"
    p.devMapping = [1]
    assert p.devMapping == "1"
    for bad in ("0:x", "0::1", ":", "-1", "0:1:"):
        with pytest.raises(qaicrt.InvalidArgumentError) as raised:
            p.devMapping = bad
        assert "devMapping" in str(raised.value) and bad in str(raised.value)
    assert p.devMapping == "1"  # a refused value changes nothing


def test_buffer_dimensions_vec_ref_is_a_list_of_size_and_dims_pairs():
    v = qaicrt.BufferDimensionsVecRef([(4, [1, 16]), (8, (2, 3))])
    assert len(v) == 2 and v[0] == (4, [1, 16]) and v[1][1] == [2, 3]
    v[1] = (2, np.zeros((5, 7)).shape)
    assert v[1] == (2, [5, 7]) and isinstance(v[1][1], list)
    v[0] = (8, (0,))
    assert v[0][1] == [0]
    assert [size for size, _ in v] == [8, 2]
    v[-1] = (1, ())
    assert v[1] == (1, [])
    with pytest.raises(TypeError):
        v[0] = 4
    with pytest.raises(TypeError):
        qaicrt.BufferDimensionsVecRef([(4, "x")])


# --- Program and ExecObj on a plain program -----------------------------------------------------

def test_program_misuse_returns_statuses_and_names_the_reason(emulator, relu16, capfd):
    context = qaicrt.Context([0])
    qpc = qaicrt.Qpc(str(relu16))
    program = qaicrt.Program(context, None, qpc)
    assert program.getDevice() == 0
    assert program.activate() == qaicrt.QStatus.QS_WRONG_STATE
    assert "load()" in program.getErrorMessage() and "load()" in capfd.readouterr().err
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.ExecObj(context, program)
    assert raised.value.status == qaicrt.QStatus.QS_WRONG_STATE and "activate()" in str(raised.value)
    assert program.deactivate() == qaicrt.QStatus.QS_WRONG_STATE
    assert program.load() == OK and program.activate() == OK and program.isActive()
    assert program.activate() == qaicrt.QStatus.QS_WRONG_STATE
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.Program(context, 1, qpc)  # the context has device 0 only
    assert raised.value.status == qaicrt.QStatus.QS_NODEV
    with pytest.raises(qaicrt.Error):
        qaicrt.Queue(context, 1)


def test_a_round_trip_with_read_only_output_placeholders(emulator, relu16):
    session = VendorStyleSession(relu16)
    assert [b.name for b in session.bindings] == ["x", "y"]
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
    status, outputs = session.run({"x": x})
    assert status == OK
    np.testing.assert_array_equal(outputs["y"], np.maximum(x, 0))
    first = outputs["y"].copy()
    status, again = session.run({"x": -x})  # the slot is used again
    assert status == OK
    np.testing.assert_array_equal(again["y"], np.maximum(-x, 0))
    np.testing.assert_array_equal(outputs["y"], first)  # an earlier result is not overwritten
    _, buffers = session.exec_obj.getData()
    assert buffers[0].size == 64 and bytes(buffers[0]) == (-x).tobytes()  # inputs as given
    assert session.qbuffers[1].readonly and bytes(session.qbuffers[1]) == bytes(64)  # untouched


def test_run_the_pair_form_and_writable_outputs_in_place(emulator, relu16):
    session = VendorStyleSession(relu16)
    x = np.arange(-8, 8, dtype=np.float32).reshape(1, 16)
    assert session.exec_obj.run([qaicrt.QBuffer(x.tobytes()), qaicrt.QBuffer(bytes(64))]) == OK
    status, outputs = session.exec_obj.getData()
    assert status == OK
    np.testing.assert_array_equal(np.frombuffer(bytes(outputs[1]), np.float32), np.maximum(x, 0).reshape(-1))
    y = np.full((1, 16), -5, dtype=np.float32)
    assert session.exec_obj.setData([(0, -x), (1, y)]) == OK
    assert session.queue.enqueue(session.exec_obj) == OK
    assert session.exec_obj.waitForCompletion() == OK
    np.testing.assert_array_equal(y, np.maximum(-x, 0))  # written into the caller's array


def test_exec_obj_refusals(emulator, relu16, capfd):
    session = VendorStyleSession(relu16)
    exec_obj = session.exec_obj
    assert exec_obj.waitForCompletion() == qaicrt.QStatus.QS_WRONG_STATE  # nothing enqueued
    assert session.queue.enqueue(qaicrt.ExecObj(session.context, session.program)) == qaicrt.QStatus.QS_INVAL
    assert "setData" in capfd.readouterr().err
    assert exec_obj.setData(session.qbuffers[:1], session.dims[:1]) == qaicrt.QStatus.QS_INVAL
    assert "expected 2 buffers" in exec_obj.getErrorMessage()
    short = qaicrt.BufferDimensionsVecRef([(4, [1, 16]), (4, [1, 16])])
    assert exec_obj.setData([qaicrt.QBuffer(bytes(32)), qaicrt.QBuffer(bytes(64))], short) == OK
    assert session.queue.enqueue(exec_obj) == qaicrt.QStatus.QS_BUFFER_SIZE
    assert "'x'" in exec_obj.getErrorMessage()
    # The slot is still usable.
    assert session.run({"x": np.ones((1, 16), np.float32)})[0] == OK
    # Slots are bounded: the program's activation has a fixed number of them.
    held = [qaicrt.ExecObj(session.context, session.program) for _ in range(7)]
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.ExecObj(session.context, session.program)
    assert raised.value.status == qaicrt.QStatus.QS_NO_RESOURCES
    del held


def test_deactivation_stops_exec_objs_and_a_program_activates_again(emulator, relu16):
    session = VendorStyleSession(relu16)
    lingering = qaicrt.ExecObj(session.context, session.program)
    assert session.program.deactivate() == OK and not session.program.isActive()
    assert lingering.setData(session.qbuffers, session.dims) == OK
    assert session.queue.enqueue(lingering) == qaicrt.QStatus.QS_WRONG_STATE
    assert "deactivated" in lingering.getErrorMessage()
    del lingering, session.exec_obj
    session.activate()
    assert session.run({"x": np.ones((1, 16), np.float32)})[0] == OK


# --- a retained-state decoder with prefill and decode specializations ---------------------------

def retained_names(session):
    return [b.name for b in session.bindings if b.name.startswith("past_") or b.name.endswith("_RetainedState")]


def decoder_session(program, config):
    session = VendorStyleSession(program, device_ids=[0])
    session.skip_buffers(retained_names(session))
    session.set_buffers({"logits": np.zeros((1, 1, config["vocab"]), np.float32)})
    return session


def generate(session, prompt, count):
    ids = np.array([prompt], dtype=np.int64)
    positions = np.arange(len(prompt), dtype=np.int64)[None, :]
    tokens, all_logits = [], []
    for _ in range(count):
        status, outputs = session.run({"input_ids": ids, "position_ids": positions})
        assert status == OK
        token = int(outputs["logits"].reshape(-1).argmax())
        tokens.append(token)
        all_logits.append(outputs["logits"].copy())
        ids = np.array([[token]], dtype=np.int64)
        positions = positions[:, -1:] + 1
    return tokens, all_logits


def test_a_generation_loop_through_program_and_exec_obj_matches_pytorch(emulator, decoder, decoder_program, config):
    session = decoder_session(decoder_program, config)
    tokens, logits = generate(session, config["prompt"], config["generate"])
    assert tokens == config["tokens"]
    for step, got in enumerate(logits):
        want = np.fromfile(decoder / "reference" / f"step{step}" / "logits.raw", dtype=np.float32)
        assert got.shape == (1, 1, config["vocab"])
        assert np.max(np.abs(got.reshape(-1) - want)) <= 1e-4 * np.max(np.abs(want)), f"step {step}"


def probe(session, config):
    """A decode step at a position whose attention reads the cache written before it."""
    position, token = config["prefill_len"] + 2, config["tokens"][0]
    status, outputs = session.run({"input_ids": np.array([[token]], np.int64),
                                   "position_ids": np.array([[position]], np.int64)})
    assert status == OK
    return outputs["logits"].copy()


def test_deactivate_drops_the_retained_state(emulator, decoder_program, config):
    session = decoder_session(decoder_program, config)
    on_zeros = probe(session, config)
    session.deactivate()
    session.activate()
    generate(session, config["prompt"], 4)
    on_history = probe(session, config)
    assert not np.allclose(on_history, on_zeros), "the probe did not read the cache"
    session.deactivate()
    session.activate()  # a new activation: zeroed state
    np.testing.assert_array_equal(probe(session, config), on_zeros)


def test_a_buffer_for_retained_state_is_refused_naming_it(emulator, decoder_program, config):
    session = decoder_session(decoder_program, config)
    index = session.index["past_key.0"]
    session.qbuffers[index] = qaicrt.QBuffer(bytes(session.bindings[index].size))
    assert session.exec_obj.setData(session.qbuffers, session.dims) == qaicrt.QStatus.QS_INVAL
    assert "'past_key.0'" in session.exec_obj.getErrorMessage()
    assert "retained" in session.exec_obj.getErrorMessage()


def test_dims_of_no_specialization_fail_at_the_wait_and_the_slot_stays_usable(emulator, decoder_program, config,
                                                                               capfd):
    session = decoder_session(decoder_program, config)
    wrong = np.zeros((1, 3), np.int64)
    session.set_buffers({"input_ids": wrong, "position_ids": wrong})
    assert session.exec_obj.setData(session.qbuffers, session.dims) == OK
    assert session.queue.enqueue(session.exec_obj) == OK
    assert session.exec_obj.waitForCompletion() == qaicrt.QStatus.QS_BUFFER_DIMS
    assert "No matching dimension found" in capfd.readouterr().err
    assert session.exec_obj.getData()[0] == qaicrt.QStatus.QS_BUFFER_DIMS
    tokens, _ = generate(session, config["prompt"], 2)
    assert tokens == config["tokens"][:2]


# --- InferenceVector and the enum alias --------------------------------------------------------

def test_inference_vector_submitted_with_an_id(emulator, relu16):
    context = qaicrt.Context([0])
    qpc = qaicrt.Qpc(str(relu16))
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 2, 1)
    vector = qaicrt.InferenceVector(qpc.getBufferMappings())
    buffers = vector.getVector()
    assert [b.size for b in buffers] == [64, 64]
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    for mapping in qpc.getBufferMappings():
        if mapping.ioType == qaicrt.BufferIoTypeEnum.BUFFER_IO_TYPE_INPUT:
            buffers[mapping.index] = qaicrt.QBuffer(x)
    assert vector.getVector()[0].obj is x
    inference_set.submit(vector, 7)
    status, handle = inference_set.getCompletedId(7, 10_000_000)
    assert status == OK
    np.testing.assert_array_equal(np.frombuffer(bytes(vector.getVector()[1]), np.float32), np.maximum(x, 0))
    inference_set.putCompleted(handle)
    assert qaicrt.BufferIoTypeEnum is qaicrt.QAicBufferIoTypeEnum
