# SPDX-License-Identifier: Apache-2.0
"""qaicrt against a real qaic-emu: every class of seed 001's API, the enums, Util, and errors as
exceptions that carry the QStatus and name the buffer, field or device."""
import gc
import os
import pathlib
import threading

import numpy as np
import pytest

import qaicrt
from conftest import BIN, SOURCE, compile_file, compile_ir, ir_network, run


def add_ir(elements, droppable_a=False):
    """c = a + b over [1, elements] floats; `a` may be dropped (selective IO) when asked."""
    flags = {"is_partial_allowed": True, "skip_partial_header": True, "allow_skip": True} if droppable_a else {}
    return ir_network(
        [{"name": "add", "optype": "elew", "tensors_in": [{"arg_name": "src1", "name": "a"}, {"arg_name": "src2", "name": "b"}],
          "tensors_out": [{"arg_name": "dst", "name": "c"}], "params": [{"arg_name": "elew_op", "value": "TL_SUM"}]}],
        [dict({"name": "a", "tensor": "a", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, elements]}, **flags),
         {"name": "b", "tensor": "b", "direction": "in", "dtype": "TL_FLOAT", "dims": [1, elements]},
         {"name": "c", "tensor": "c", "direction": "out", "dtype": "TL_FLOAT", "dims": [1, elements]}])


@pytest.fixture(scope="module")
def context(emulator):
    return qaicrt.Context([0])


def infer(inference_set, buffers, request_id=1):
    """One synchronous inference; returns the completed handle's status."""
    status, handle = inference_set.getAvailable(10_000_000)
    assert status == qaicrt.QS_SUCCESS
    handle.setBuffers(buffers)
    inference_set.submit(handle, request_id)
    status, done = inference_set.getCompletedId(request_id, 30_000_000)
    assert done == handle
    inference_set.putCompleted(done)
    return status


# ---- Qpc -------------------------------------------------------------------------------------

def test_qpc_describes_its_buffers_programs_and_bytes(smallcnn):
    qpc = qaicrt.Qpc(str(smallcnn))
    mappings = qpc.getBufferMappings()
    assert [m.ioType for m in mappings] == [qaicrt.BUFFER_IO_TYPE_INPUT, qaicrt.BUFFER_IO_TYPE_OUTPUT]
    assert [m.index for m in mappings] == [0, 1]
    assert all(m.dataType == qaicrt.BUFFER_DATA_TYPE_FLOAT for m in mappings)
    v2 = qpc.getBufferMappingsV2()
    assert isinstance(v2[0], qaicrt.v2.BufferMapping) and isinstance(v2[0], qaicrt.BufferMapping)
    assert [m.bufferName for m in v2] == [m.bufferName for m in mappings]
    for m in v2:
        assert m.size == 4 * int(np.prod(m.ioShapes.defaultDims))
        assert m.ioShapes.allowedDims[0] == m.ioShapes.defaultDims
    assert len(qpc.getBufferMappingsDma()) == len(mappings)
    info = qpc.getInfo()
    assert len(info.program) == 1 and info.program[0].numCores >= 1 and info.program[0].batchSize >= 1
    assert [m.bufferName for m in info.program[0].bufferMappings] == [m.bufferName for m in mappings]
    assert info.constants and all(c.size > 0 for c in info.constants)
    data = (smallcnn / "programqpc.bin").read_bytes()
    assert qpc.size() == len(data) and bytes(qpc.buffer()) == data and bytes(memoryview(qpc)) == data
    assert len(qpc.getIoDescriptorSection()) > 0 and qpc.getIoDescriptorSection() in data
    # The container file itself, the C++ factory's spelling, and bytes in memory give the same.
    for other in (qaicrt.Qpc(str(smallcnn / "programqpc.bin")), qaicrt.Qpc.Factory(str(smallcnn)),
                  qaicrt.Qpc.Factory(data), qaicrt.Qpc.Factory(np.frombuffer(data, np.uint8))):
        assert [m.bufferName for m in other.getBufferMappings()] == [m.bufferName for m in mappings]
    qpc_file = qaicrt.QpcFile(str(smallcnn))
    qpc_file.load()
    assert qpc_file.getBuffer() == data and qpc_file.size() == len(data)
    assert qpc_file.path().endswith("programqpc.bin")


def test_a_bad_container_raises_an_error_naming_the_file(workdir):
    broken = workdir / "broken"
    broken.mkdir()
    (broken / "programqpc.bin").write_bytes(b"not a container at all" * 8)
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.Qpc(str(broken))
    assert "programqpc.bin" in raised.value.message and raised.value.status == qaicrt.QS_INVAL
    assert str(raised.value).startswith("QS_INVAL: ")
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.Qpc(str(workdir / "missing"))
    assert raised.value.status == qaicrt.QS_ERROR and "missing" in str(raised.value)


# ---- Context ---------------------------------------------------------------------------------

def test_context_devices_log_level_and_id(emulator):
    everything = qaicrt.Context()
    assert everything.getDevices() == [0, 1]
    properties = qaicrt.QAicContextProperties()
    properties.initialLogLevel = qaicrt.QL_ERROR
    one = qaicrt.Context.Factory(properties, [1])
    assert one.getDevices() == [1] and one.getLogLevel() == qaicrt.QL_ERROR
    one.setLogLevel(qaicrt.QL_DEBUG)
    assert one.getLogLevel() == qaicrt.QL_DEBUG
    assert one.getId() != everything.getId()
    assert one.getPartition() is None


def test_a_missing_device_is_an_error_not_a_crash(emulator):
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.Context([7])
    assert raised.value.status == qaicrt.QS_NODEV and "7" in raised.value.message
    saved = os.environ["QAIC_ROOT"]
    os.environ["QAIC_ROOT"] = "/nonexistent-qaic-root"
    try:
        with pytest.raises(qaicrt.Error) as raised:
            qaicrt.Context()
        assert raised.value.status == qaicrt.QS_NODEV and "nonexistent-qaic-root" in raised.value.message
    finally:
        os.environ["QAIC_ROOT"] = saved


def test_log_callback_and_error_handler_receive_the_runtime_messages(emulator, workdir):
    qpc = qaicrt.Qpc(str(compile_ir(workdir, "add_errors", add_ir(16))))
    logs, errors = [], []
    properties = qaicrt.QAicContextProperties()
    properties.initialLogLevel = qaicrt.QL_DEBUG
    context = qaicrt.Context([0], properties, lambda level, message, data: logs.append((level, message, data)), "log-data",
                             lambda cid, status, message, data: errors.append((cid, status, message, data)), "err-data")
    assert logs and all(data == "log-data" and isinstance(level, qaicrt.QLogLevel) for level, _, data in logs)
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 1, 1)
    a, b, c = (np.ones((1, 16), np.float32) for _ in range(3))
    # The device fails the next request (fault injection): the status and the error handler say so.
    (emulator.root / "sys/class/accel/accel0/qaic-emu/fault/dma_fail").write_text("3 1")
    status = infer(inference_set, [a, b, c])
    assert status == qaicrt.QS_DEVICE_ERROR
    assert len(errors) == 1
    cid, err_status, message, data = errors[0]
    assert cid == context.getId() and err_status == qaicrt.QS_DEVICE_ERROR and data == "err-data"
    assert "request 1" in message
    assert infer(inference_set, [a, b, c], 2) == qaicrt.QS_SUCCESS and len(errors) == 1


# ---- InferenceSet and InferenceHandle --------------------------------------------------------

def test_the_synchronous_flow_computes(context, workdir):
    qpc = qaicrt.Qpc(str(compile_ir(workdir, "add16", add_ir(16))))
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 2, 1)
    assert (inference_set.getSetSize(), inference_set.getNumActivations()) == (2, 1)
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    b = np.full((1, 16), 0.5, np.float32)
    c = np.zeros((1, 16), np.float32)
    status, handle = inference_set.getAvailable()
    handle.setInputBuffers([a, b])
    handle.setOutputBuffers([c])
    assert all(q.obj is x for q, x in zip(handle.getBuffers(), (a, b, c)))
    assert [q.obj is a for q in handle.getInputBuffers()] == [True, False]
    assert handle.getOutputBuffers()[0].obj is c
    inference_set.submit(handle, 41)
    assert inference_set.waitForCompletion(handle, 30_000_000) == qaicrt.QS_SUCCESS
    assert handle.getStatus() == qaicrt.QS_SUCCESS and handle.getErrorMessage() == "" and handle.getId() == 41
    np.testing.assert_array_equal(c, a + b)
    assert handle.getOutputDims(2) == [1, 16]
    counts = handle.getPerformanceCounts()
    assert sorted(counts) == ["0. queue wait", "1. input preprocessing", "2. input transfer to a device",
                              "3. execution time", "4. output transfer from a device", "5. output postprocessing"]
    assert all(counts[k].executionIndex == 0 for k in counts)  # seed 002: 0 for every stage
    assert counts["3. execution time"].status == qaicrt.PerfCounter.EXECUTED
    assert isinstance(counts["3. execution time"].realTimeUs, float) and counts["3. execution time"].realTimeUs > 0
    assert all(counts[k].cpuUs >= 0 for k in counts)
    inference_set.putCompleted(handle)
    assert inference_set.waitForCompletion() == qaicrt.QS_SUCCESS
    # Both handles in flight at once, retrieved by id out of order.
    outputs = [np.zeros((1, 16), np.float32) for _ in range(2)]
    for k in range(2):
        _, h = inference_set.getAvailable()
        h.setBuffers([a, np.full((1, 16), k, np.float32), outputs[k]])
        inference_set.submit(h, 100 + k)
    for k in (1, 0):
        status, h = inference_set.getCompletedId(100 + k)
        assert status == qaicrt.QS_SUCCESS and h.getId() == 100 + k
        np.testing.assert_array_equal(outputs[k], a + k)
        inference_set.putCompleted(h)


def test_waits_time_out_with_a_status_and_misuse_raises(context, relu16):
    qpc = qaicrt.Qpc(str(relu16))
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 1, 1)
    status, handle = inference_set.getAvailable()
    assert status == qaicrt.QS_SUCCESS
    assert inference_set.getAvailable(1000) == (qaicrt.QS_TIMEDOUT, None)
    with pytest.raises(qaicrt.Error) as raised:
        inference_set.getCompletedId(5, 1000)
    assert raised.value.status == qaicrt.QS_INVAL and "requestId 5" in raised.value.message
    inference_set.putCompleted(handle)
    with pytest.raises(qaicrt.Error) as raised:
        inference_set.putCompleted(handle)
    assert raised.value.status == qaicrt.QS_WRONG_STATE
    other = qaicrt.InferenceSet(context, qpc, 0, 1, 1)
    _, foreign = other.getAvailable()
    with pytest.raises(qaicrt.Error) as raised:
        inference_set.submit(foreign, 1)
    assert raised.value.status == qaicrt.QS_WRONG_SET
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.InferenceSet(context, qpc, 0, 0, 1)
    assert raised.value.status == qaicrt.QS_INVAL and isinstance(raised.value, ValueError)


def test_buffer_errors_name_the_buffer_and_the_status(context, relu16):
    inference_set = qaicrt.InferenceSet(context, qaicrt.Qpc(str(relu16)), 0, 1, 1)
    _, handle = inference_set.getAvailable()
    handle.setBuffers([np.zeros(15, np.float32), np.zeros(16, np.float32)])
    with pytest.raises(qaicrt.InvalidArgumentError) as raised:
        inference_set.submit(handle, 1)
    assert raised.value.status == qaicrt.QS_BUFFER_SIZE and "'x'" in raised.value.message
    assert isinstance(raised.value, ValueError) and str(raised.value).startswith("QS_BUFFER_SIZE: ")
    with pytest.raises(qaicrt.Error) as raised:
        handle.setBuffers([np.zeros(16, np.float32)])
    assert raised.value.status == qaicrt.QS_INVAL
    # An output must be writable: read-only memory is refused before the runtime sees it.
    with pytest.raises(qaicrt.InvalidArgumentError) as raised:
        handle.setBuffers([np.zeros(16, np.float32), bytes(64)])
    assert "'y'" in raised.value.message and "read-only" in raised.value.message
    # A list item that is no usable buffer is named too (fuzz_python_args found them unnamed):
    # by mapping name and index, or by position past the program's buffers.
    with pytest.raises(qaicrt.InvalidArgumentError) as raised:
        handle.setBuffers([np.zeros(16, np.float32), np.zeros((16, 2), np.float32)[:, 0]])
    assert "buffer 'y' (index 1): the ndarray is not C-contiguous" in raised.value.message
    with pytest.raises(TypeError, match=r"buffer 'x' \(index 0\): a tuple has no buffer"):
        handle.setBuffers([(), np.zeros(16, np.float32)])
    # Object pointers are no data: the device would write over them (an output) or read them.
    with pytest.raises(qaicrt.InvalidArgumentError, match=r"buffer 'y' \(index 1\): the ndarray holds Python objects"):
        handle.setBuffers([np.zeros(16, np.float32), np.empty(8, object)])
    assert qaicrt.QBuffer(np.zeros(8, "datetime64[s]")).size == 64  # no buffer format, but plain data
    # Found by fuzz_python_args: a byte view of an object array ('B' in its own format) let the
    # device write over object pointers, which crashed when the array was freed; refused by the
    # format of the memory underneath, also through an array made over such a view.
    objects = np.array([None] * 4, dtype=object)
    for hidden in (memoryview(objects).cast("B"), np.frombuffer(memoryview(objects).cast("B"), np.uint8)):
        with pytest.raises(qaicrt.InvalidArgumentError, match="holds Python objects"):
            qaicrt.QBuffer(hidden)
    assert qaicrt.QBuffer(memoryview(np.zeros(4, np.float32)).cast("B")).size == 16  # a byte view of data
    with pytest.raises(TypeError, match="item 2 .*a NoneType has no buffer"):
        handle.setBuffers([np.zeros(16, np.float32), np.zeros(16, np.float32), None])
    with pytest.raises(qaicrt.InvalidArgumentError, match=r"handles\[1\] is None"):
        inference_set._keepBusy([handle, None], 1, 1, None)  # was a null dereference
    handle.setBufferDims(0, [1, 17])
    handle.setBuffers([np.zeros(16, np.float32), np.zeros(16, np.float32)])
    with pytest.raises(qaicrt.InvalidArgumentError) as raised:
        inference_set.submit(handle, 2)
    assert raised.value.status == qaicrt.QS_BUFFER_DIMS and "'x'" in raised.value.message
    with pytest.raises(qaicrt.Error):
        handle.setBufferDims(9, [1])
    # Found by fuzz_python_args: a memoryview that cannot give its items (a big-endian or a
    # multi-dimensional one) raised NotImplementedError through pybind11's list caster; errors
    # now name the argument and the element.
    for dims in (memoryview(np.array([1, 2], ">i2")), memoryview(np.zeros((2, 2), np.int64)), "12", 3):
        with pytest.raises(TypeError, match="setBufferDims: dims"):
            handle.setBufferDims(0, dims)
    with pytest.raises(ValueError, match=r"setBufferDims: dims\[1\]: -4 is negative"):
        handle.setBufferDims(0, [1, -4])
    for huge in (2**64, -2**70):  # beyond a C long either way: ValueError, not OverflowError
        with pytest.raises(ValueError, match=r"setBufferDims: dims\[0\]"):
            handle.setBufferDims(0, [huge])
    for huge in (2**64, -2**70):  # beyond a C long either way: ValueError, not OverflowError
        with pytest.raises(ValueError, match=r"setBufferDims: dims\[0\]"):
            handle.setBufferDims(0, [huge])
    with pytest.raises(TypeError, match=r"setBufferDims: dims\[0\]: a float is not an integer"):
        handle.setBufferDims(0, [1.5])
    handle.setBufferDims(0, np.array([1, 16], np.uint16))  # any sequence of integers
    # The rows of a 2-D array are made as they are read: each is kept while it is in use (a
    # borrowed row was freed at once, a use after free under AddressSanitizer).
    rows = np.zeros((2, 16), np.float32)
    handle.setBuffers(rows)
    assert all(np.shares_memory(buffer, row) for buffer, row in zip(handle.getBuffers(), rows))
    inference_set.putCompleted(handle)
    with pytest.raises(TypeError, match=r"dims\[0\]: the memoryview's items cannot be read"):
        inference_set._runSync([np.zeros(16, np.float32)] * 2, 3, [memoryview(np.zeros((2, 2)))], None)
    with pytest.raises(ValueError, match=r"skipped\[1\]: 2 is out of range"):
        inference_set._runSync([np.zeros(16, np.float32)] * 2, 3, None, [None, 2])


def test_partial_buffers_take_their_dims(context, workdir):
    qpc = qaicrt.Qpc(str(compile_file(workdir, SOURCE / "tests/integration/qaic-runner/data/partial.json")))
    names = [m.bufferName for m in qpc.getBufferMappings()]
    assert names == ["in0", "in1", "out0", "out1"]
    assert [m.allowSkip for m in qpc.getBufferMappingsV2()] == [True, False, True, True]
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 1, 1)
    in0 = np.arange(8, dtype=np.float32)
    in1 = np.arange(128, dtype=np.float32)
    out0, out1 = np.zeros(64, np.float32), np.zeros(32, np.float32)
    _, handle = inference_set.getAvailable()
    handle.setBuffers([in0, in1, out0, out1])
    handle.setBufferDims(0, [8])
    inference_set.submit(handle, 1)
    assert inference_set.waitForCompletion(handle) == qaicrt.QS_SUCCESS, handle.getErrorMessage()
    assert handle.getOutputDims(2) == [16]
    np.testing.assert_array_equal(out0[:16], np.concatenate([in0, in0]))
    np.testing.assert_array_equal(out1, in1[:32])
    inference_set.putCompleted(handle)
    # Selective IO: in0 left out; a regular buffer cannot be.
    _, handle = inference_set.getAvailable()
    handle.setBufferSkipped(0, True)
    out1[:] = 0
    inference_set.submit(handle, 2)
    assert inference_set.waitForCompletion(handle) == qaicrt.QS_SUCCESS, handle.getErrorMessage()
    np.testing.assert_array_equal(out1, in1[:32])
    inference_set.putCompleted(handle)
    _, handle = inference_set.getAvailable()
    handle.setBufferSkipped(0, False)
    handle.setBufferSkipped(1, True)
    with pytest.raises(qaicrt.Error) as raised:
        inference_set.submit(handle, 3)
    assert raised.value.status == qaicrt.QS_INVAL and "'in1'" in raised.value.message
    handle.setBufferSkipped(1, False)
    inference_set.putCompleted(handle)


def test_notify_callbacks_run_on_runtime_threads_with_the_handle_and_user_data(context, workdir):
    qpc = qaicrt.Qpc(str(compile_ir(workdir, "add_notify", add_ir(16))))
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 4, 1)
    done = threading.Event()
    seen = []
    main = threading.get_ident()
    outputs = [np.zeros((1, 16), np.float32) for _ in range(8)]
    a = np.ones((1, 16), np.float32)

    def notify(handle, data):
        seen.append((data, handle.getStatus(), threading.get_ident() != main))
        np.testing.assert_array_equal(outputs[data], a + data)
        inference_set.putCompleted(handle)  # the runtime allows giving it back here
        if len(seen) == 8:
            done.set()

    for k in range(8):
        status, handle = inference_set.getAvailable(10_000_000)
        assert status == qaicrt.QS_SUCCESS
        handle.setBuffers([a, np.full((1, 16), k, np.float32), outputs[k]])
        inference_set.submit(handle, notify, k)
    assert done.wait(30)
    assert sorted(d for d, _, _ in seen) == list(range(8))
    assert all(status == qaicrt.QS_SUCCESS and other for _, status, other in seen)


def test_an_exception_in_a_callback_is_reported_and_the_set_goes_on(context, relu16, monkeypatch):
    reported = []
    delivered = threading.Event()

    def hook(unraisable):
        reported.append(unraisable)
        delivered.set()

    monkeypatch.setattr("sys.unraisablehook", hook)
    inference_set = qaicrt.InferenceSet(context, qaicrt.Qpc(str(relu16)), 0, 1, 1)
    x, y = np.ones(16, np.float32), np.zeros(16, np.float32)
    _, handle = inference_set.getAvailable()
    handle.setBuffers([x, y])

    def failing(h, data):
        inference_set.putCompleted(h)
        raise KeyError("raised inside the notify callback")

    inference_set.submit(handle, failing)
    assert delivered.wait(30)
    assert isinstance(reported[0].exc_value, KeyError)
    assert "raised inside the notify callback" in str(reported[0].exc_value)
    assert "notify callback" in str(reported[0].object)
    assert infer(inference_set, [x, y]) == qaicrt.QS_SUCCESS


# ---- groups, profiling, partitions, Util --------------------------------------------------------

def test_two_sets_of_a_group_share_the_device(context, workdir):
    qpc = qaicrt.Qpc(str(compile_ir(workdir, "add_group", add_ir(16))))
    group = qaicrt.InferenceSetGroup.Factory("")
    properties = qaicrt.InferenceSetProperties()
    properties.inferenceSetGroup = group
    properties.name = "member"
    first = qaicrt.InferenceSet(context, qpc, 0, 1, 1, properties)
    second = qaicrt.InferenceSet(context, qpc, 0, 1, 1, properties)
    assert first.getName() == "member" and not group.isEnabled()
    a = np.ones((1, 16), np.float32)
    for k, member in enumerate([first, second, first]):
        c = np.zeros((1, 16), np.float32)
        assert infer(member, [a, np.full((1, 16), k, np.float32), c]) == qaicrt.QS_SUCCESS
        np.testing.assert_array_equal(c, a + k)
    assert group.isEnabled()
    group.disable()
    assert not group.isEnabled()
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.InferenceSet(context, qpc, 0, 1, 2, properties)
    assert raised.value.status == qaicrt.QS_INVAL
    named = qaicrt.InferenceSetGroup("python-named")
    assert qaicrt.InferenceSetGroup.Factory("python-named").getName() == "python-named"
    named.release()


def test_profiling_reports_the_stage_latencies(context, relu16):
    inference_set = qaicrt.InferenceSet(context, qaicrt.Qpc(str(relu16)), 0, 1, 1)
    reports = []
    profiling = qaicrt.ProfilingHandle(inference_set, 3, lambda report, data: reports.append((report, data)), "mine")
    profiling.start()
    x, y = np.ones(16, np.float32), np.zeros(16, np.float32)
    for k in range(5):
        assert infer(inference_set, [x, y], k + 1) == qaicrt.QS_SUCCESS
    profiling.stop()
    (report, data), = reports
    assert data == "mine" and report.type == qaicrt.PROFILING_TYPE_LATENCY
    assert [s.requestId for s in report.samples] == [1, 2, 3]
    assert all(s.status == qaicrt.QS_SUCCESS and len(s.stages) == 6 for s in report.samples)
    assert set(report.meanUs) == set(report.samples[0].stages)
    profiling.start()
    profiling.stop()  # nothing completed: no report (seed 001)
    assert len(reports) == 1
    with pytest.raises(qaicrt.Error) as raised:
        profiling.stop()
    assert raised.value.status == qaicrt.QS_WRONG_STATE


def test_partitions_from_qaicd(emulator, qaicd, relu16):
    qpc = qaicrt.Qpc(str(relu16))
    need = qaicrt.resourcesFor(qpc, 1)
    assert need.numNsp >= 1 and need.numVc == 1 and need == qaicrt.resourcesFor(qpc, 1)
    partition = qaicrt.Partition.acquire(need, 0, "python-test")
    assert partition.id() >= 100 and partition.parent() == 0 and partition.label() == "python-test"
    assert partition.resources() == need and pathlib.Path(partition.node()).exists()
    info = qaicrt.Util.getDeviceInfo(partition.id())
    assert info.partition is not None and info.partition.parent == 0 and info.partition.label == "python-test"
    assert info.partition.holderPid == os.getpid()
    context = qaicrt.Context([partition.id()])
    x, y = np.full(16, -2.0, np.float32), np.ones(16, np.float32)
    assert infer(qaicrt.InferenceSet(context, qpc, partition.id(), 1, 1), [x, y]) == qaicrt.QS_SUCCESS
    assert not y.any()
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.Partition.acquire(qaicrt.ResourceRequest(numNsp=1000), 0)
    assert raised.value.status == qaicrt.QS_NO_RESOURCES and "numNsp" in raised.value.message
    # The context can hold the lease itself.
    properties = qaicrt.QAicContextProperties()
    properties.partition = need
    leased = qaicrt.Context.Factory(properties, [])
    assert leased.getPartition().id() == leased.getDevices()[0] >= 100
    assert len(qaicrt.Util.getDeviceIds()) == 4
    # Both leases end with their holders: the partitions' devices are gone at once.
    del partition, context, leased, raised
    gc.collect()
    assert qaicrt.Util.getDeviceIds() == [0, 1]


def test_partition_without_qaicd_is_a_clear_error(emulator, relu16, monkeypatch, workdir):
    monkeypatch.setenv("QAICD_SOCKET", str(workdir / "no-qaicd.sock"))
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.Partition.acquire(qaicrt.resourcesFor(qaicrt.Qpc(str(relu16)), 1))
    assert raised.value.status == qaicrt.QS_NODEV and "qaicd is not running" in raised.value.message


def test_util_lists_devices_with_the_fields_qaic_util_prints(emulator):
    assert qaicrt.Util.getDeviceIds() == [0, 1] and qaicrt.Util().getDeviceIds() == [0, 1]
    info = qaicrt.Util.getDeviceInfo(1)
    printed = run([BIN / "qaic-util", "-q", "-d", "1"], env=emulator.env()).stdout
    fields = dict(line.strip().split(":", 1) for line in printed.splitlines() if line.startswith("\t"))
    assert info.id == 1 and info.status == fields["Status"] == "Ready"
    assert str(info.nspTotal) == fields["Nsp Total"] and str(info.nspFree) == fields["Nsp Free"]
    assert fields["Dram Total"].startswith(str(info.dramTotalMb)) and info.fwVersion == fields["FW Version"]
    assert info.pciAddress in printed and info.partition is None and len(info.dbcStates) == info.vcTotal
    with pytest.raises(qaicrt.Error) as raised:
        qaicrt.Util.getDeviceInfo(42)
    assert raised.value.status == qaicrt.QS_NODEV and "42" in raised.value.message


def test_enums_and_status_names():
    assert qaicrt.QStatus.QS_BUFFER_DIMS == qaicrt.QS_BUFFER_DIMS and int(qaicrt.QS_BUFFER_DIMS) == 8
    assert qaicrt.statusName(qaicrt.QS_NO_RESOURCES) == "QS_NO_RESOURCES"
    assert int(qaicrt.QAicBufferDataTypeEnum.BUFFER_DATA_TYPE_INT64I) == 7
    assert [int(level) for level in (qaicrt.QL_DEBUG, qaicrt.QL_INFO, qaicrt.QL_WARN, qaicrt.QL_ERROR)] == [0, 1, 2, 3]
    error = qaicrt.errorFor(qaicrt.QS_TIMEDOUT, "waited")
    assert isinstance(error, qaicrt.TimedOutError) and isinstance(error, TimeoutError)
    assert error.status == qaicrt.QS_TIMEDOUT and error.message == "waited" and str(error) == "QS_TIMEDOUT: waited"
