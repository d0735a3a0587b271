# SPDX-License-Identifier: Apache-2.0
"""Zero copy: a QBuffer shares the memory of the object it was made from, the runtime reads inputs
from and writes outputs into that memory, and the object lives as long as the runtime may use it.
DmaBuffer is memory numpy uses in place."""
import gc
import weakref

import numpy as np
import pytest

import qaicrt
from conftest import compile_ir, relu_ir


@pytest.fixture(scope="module")
def context(emulator):
    return qaicrt.Context([0])


@pytest.fixture(scope="module")
def relu_set(context, relu16):
    return qaicrt.InferenceSet(context, qaicrt.Qpc(str(relu16)), 0, 1, 1)


def run_once(inference_set, buffers=None, request_id=1):
    status, handle = inference_set.getAvailable(10_000_000)
    assert status == qaicrt.QS_SUCCESS
    if buffers is not None:
        handle.setBuffers(buffers)
    inference_set.submit(handle, request_id)
    assert inference_set.waitForCompletion(handle, 30_000_000) == qaicrt.QS_SUCCESS, handle.getErrorMessage()
    inference_set.putCompleted(handle)
    return handle


def test_a_qbuffer_shares_the_memory_of_its_object():
    array = np.arange(16, dtype=np.float32)
    qbuffer = qaicrt.QBuffer(array)
    assert np.shares_memory(qbuffer, array) and qbuffer.buf == array.ctypes.data
    assert qbuffer.size == array.nbytes and qbuffer.type == qaicrt.QBUFFER_TYPE_HEAP and qbuffer.obj is array
    view = np.frombuffer(qbuffer, np.float32)
    array[3] = 42
    assert view[3] == 42 and not qbuffer.readonly
    for source in (bytearray(64), memoryview(bytearray(64)), np.zeros((4, 4), np.int64)[1:3]):
        assert np.shares_memory(qaicrt.QBuffer(source), np.asarray(source).view(np.uint8).reshape(-1))
    read_only = qaicrt.QBuffer(b"\x01" * 64)
    assert read_only.readonly and bytes(read_only) == b"\x01" * 64
    with pytest.raises(ValueError, match="C-contiguous"):
        qaicrt.QBuffer(np.zeros((4, 4), np.float32)[:, ::2])
    with pytest.raises(TypeError, match="has no buffer"):
        qaicrt.QBuffer(12)


def test_outputs_are_written_into_the_callers_array_and_inputs_read_from_it(relu_set):
    x = np.full(16, -1.0, np.float32)
    y = np.full(16, 7.0, np.float32)
    address = y.ctypes.data
    status, handle = relu_set.getAvailable()
    handle.setBuffers([x, y])
    x[:] = np.arange(16, dtype=np.float32) - 8  # after setBuffers: the runtime reads x itself
    relu_set.submit(handle, 1)
    assert relu_set.waitForCompletion(handle) == qaicrt.QS_SUCCESS
    np.testing.assert_array_equal(y, np.maximum(np.arange(16) - 8, 0))
    assert y.ctypes.data == address
    assert np.shares_memory(handle.getBuffers()[1], y) and np.shares_memory(handle.getBuffers()[0], x)
    relu_set.putCompleted(handle)


def test_the_handle_keeps_its_buffers_objects_alive_until_replaced(relu_set):
    x = np.full(16, 3.0, np.float32)
    y = np.zeros(16, np.float32)
    x_ref, y_ref = weakref.ref(x), weakref.ref(y)
    handle = run_once(relu_set, [x, qaicrt.QBuffer(y)])
    out = np.frombuffer(handle.getBuffers()[1], np.float32)
    del x, y
    gc.collect()
    assert x_ref() is not None and y_ref() is not None, "the runtime may still use them"
    np.testing.assert_array_equal(out, 3.0)
    run_once(relu_set)  # the same buffers again, from objects only the handle holds
    run_once(relu_set, [np.zeros(16, np.float32), np.zeros(16, np.float32)])
    del out
    gc.collect()
    assert x_ref() is None and y_ref() is None, "replaced buffers are let go"


def test_a_bytearray_cannot_be_resized_while_the_runtime_holds_it(relu_set):
    x = bytearray(np.ones(16, np.float32).tobytes())
    y = bytearray(64)
    handle = run_once(relu_set, [x, y])
    assert np.frombuffer(bytes(y), np.float32).tolist() == [1.0] * 16
    with pytest.raises(BufferError):
        y.extend(b"more")
    run_once(relu_set, [np.zeros(16, np.float32), np.zeros(16, np.float32)])
    gc.collect()
    y.extend(b"more")  # released with the QBuffer
    assert handle is not None


def test_a_dma_buffer_is_a_writable_array_whose_base_keeps_it(context):
    dma = context.allocateDmaBuffer(0, 256)
    assert dma.size() == 256 and dma.fd() >= 0
    floats = dma.numpy(np.float32)
    assert floats.shape == (64,) and floats.flags.writeable and floats.base is dma
    floats[:] = np.arange(64)
    again = np.asarray(dma).view(np.float32)
    assert again[63] == 63 and np.shares_memory(again, floats)
    shaped = dma.numpy("int32", (4, 8), 128)
    assert shaped.shape == (4, 8) and np.shares_memory(shaped, floats[32:])
    with pytest.raises(ValueError, match="do not fit"):
        dma.numpy(np.float32, 65)
    # Found by fuzz_python_args: a zero-size dtype divided by zero, an object dtype made object
    # pointers of the device's bytes, and a shape whose bytes wrap around 64 bits passed the check.
    for dtype, reason in (("S0", "no size"), ("V0", "no size"), (object, "Python objects"), ("f4,O", "Python objects")):
        with pytest.raises(ValueError, match=reason):
            dma.numpy(dtype)
    with pytest.raises(ValueError, match="do not fit"):
        dma.numpy(np.float64, [2**61, 8])
    with pytest.raises(ValueError, match="out of range"):
        dma.numpy("u1", [2**64])
    with pytest.raises(TypeError, match="shape"):
        dma.numpy("u1", "12")
    # Also fuzz_python_args: with a zero among the dims the bytes are 0, but numpy's strides are
    # products of the other dims and overflowed (undefined behaviour in pybind11's c_strides);
    # and a memoryview shape that cannot give its items raised NotImplementedError.
    with pytest.raises(ValueError, match="do not fit"):
        dma.numpy("u1", [0, 2**62, 223])
    assert dma.numpy("u1", [0, 2**20, 3]).shape == (0, 2**20, 3)
    with pytest.raises(ValueError, match="DmaBuffer.numpy: dtype: .*too large"):  # numpy's OverflowError
        dma.numpy({"names": ["a"], "formats": ["f4"], "offsets": [2**70]})
    with pytest.raises(TypeError, match=r"shape: the memoryview's items cannot be read"):
        dma.numpy("u1", memoryview(np.zeros((2, 2), np.uint8)))
    assert dma.numpy("u1", np.int64(3)).shape == (3,) and dma.numpy("u1", (np.uint8(2), 4)).shape == (2, 4)
    region = dma.qbuffer(64, 128)
    assert region.type == qaicrt.QBUFFER_TYPE_DMABUF and region.offset == 64 and region.size == 128
    assert region.handle == dma.fd() and np.shares_memory(region, floats[16:48])
    dma_ref = weakref.ref(dma)
    del dma, again, shaped
    gc.collect()
    assert dma_ref() is not None  # floats' base and the region hold it
    floats[0] = 5.0
    del floats, region
    gc.collect()
    assert dma_ref() is None
    with pytest.raises(qaicrt.Error) as raised:
        context.allocateDmaBuffer(0, 0)
    assert raised.value.status == qaicrt.QS_INVAL


def test_inferences_through_dma_buffers_happen_in_place(context, workdir):
    n = 4096
    qpc = qaicrt.Qpc(str(compile_ir(workdir, "relu4096", relu_ir([1, n]))))
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 1, 1)
    into, out_of = inference_set.allocateDmaBuffer(4 * n), inference_set.allocateDmaBuffer(4 * n)
    x, y = into.numpy(np.float32, (1, n)), out_of.numpy(np.float32, (1, n))
    for k in range(3):
        x[:] = np.linspace(-1, 1, n, dtype=np.float32) * (k + 1)
        y[:] = -7
        run_once(inference_set, [into.qbuffer(), out_of.qbuffer()], k + 1)
        np.testing.assert_array_equal(y, np.maximum(x, 0))
    # Another context's DMA buffer is a dma-buf like any other: the set's device imports it
    # (PRIME) and reads it in place (docs/runtime.md). A descriptor the device cannot import is
    # refused naming the buffer (tests/integration/runtime/DmaBufTest.cpp).
    other = qaicrt.Context([0]).allocateDmaBuffer(0, 4 * n)
    z = other.numpy(np.float32, (1, n))
    z[:] = np.linspace(-3, 3, n, dtype=np.float32)
    y[:] = -7
    run_once(inference_set, [other.qbuffer(), out_of.qbuffer()], 9)
    np.testing.assert_array_equal(y, np.maximum(z, 0))
