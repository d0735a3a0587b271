# SPDX-License-Identifier: Apache-2.0
"""The calls of efficient-transformers' QAICInferenceSession (its default path), written here: the
vendor IO descriptor parsed with QAicApi_pb2, one QBuffer and one (itemsize, dims) pair per
binding, Program / ExecObj / Queue. The pytest suites drive the vendor's lower-level API through
it, in their own process or in a child (with tests/support on PYTHONPATH)."""
import numpy as np

import QAicApi_pb2 as aicapi
import qaicrt

OK = qaicrt.QStatus.QS_SUCCESS
NUMPY = {aicapi.FLOAT_TYPE: np.dtype(np.float32), aicapi.FLOAT_16_TYPE: np.dtype(np.float16),
         aicapi.INT64_I_TYPE: np.dtype(np.int64), aicapi.INT32_I_TYPE: np.dtype(np.int32)}


def io_desc(program_dir):
    """The program's aicapi.IoDesc, parsed."""
    status, data = qaicrt.Qpc(str(program_dir)).getIoDescriptor()
    assert status == OK
    desc = aicapi.IoDesc()
    desc.ParseFromString(bytes(data))
    return desc


class VendorStyleSession:
    """Buffers by binding index; run() sets the given arrays, enqueues and returns the outputs by
    name reshaped to the dims set for them, as the vendor's session does."""

    def __init__(self, program_dir, device_ids=None):
        if device_ids:
            self.context = qaicrt.Context(qaicrt.QIDList(device_ids))
            self.queue = qaicrt.Queue(self.context, device_ids[0])
        else:
            self.context = qaicrt.Context()
            self.queue = qaicrt.Queue(self.context, 0)
        assert self.context.setLogLevel(qaicrt.QLogLevel.QL_WARN) == OK
        qpc = qaicrt.Qpc(str(program_dir))
        status, data = qpc.getIoDescriptor()
        assert status == OK
        desc = aicapi.IoDesc()
        desc.ParseFromString(bytes(data))
        self.bindings = desc.selected_set.bindings
        self.index = {b.name: b.index for b in self.bindings}
        # Per specialization, per binding: (itemsize, dims), as the vendor's session lists them.
        self.allowed_shapes = [[(NUMPY[s.type].itemsize, list(s.dims)) for s in shapes.shapes]
                               for shapes in desc.allowed_shapes]
        properties = qaicrt.QAicProgramProperties()
        properties.dataPathTimeoutMs = 60_000
        # One device: the Program's own; several: the program's devMapping, as "0:1".
        device = None
        if device_ids and len(device_ids) == 1:
            device = device_ids[0]
        elif device_ids:
            properties.devMapping = ":".join(str(d) for d in device_ids)
        self.program = qaicrt.Program(self.context, device, qpc, properties)
        assert self.program.load() == OK
        self.activate()
        self.qbuffers = [qaicrt.QBuffer(bytes(b.size)) for b in self.bindings]
        self.dims = qaicrt.BufferDimensionsVecRef([(NUMPY[b.type].itemsize, list(b.dims)) for b in self.bindings])

    def activate(self):
        assert self.program.activate() == OK
        self.exec_obj = qaicrt.ExecObj(self.context, self.program)

    def deactivate(self):
        del self.exec_obj
        assert self.program.deactivate() == OK

    def set_buffers(self, arrays):
        for name, array in arrays.items():
            i = self.index[name]
            self.qbuffers[i] = qaicrt.QBuffer(array.tobytes())
            self.dims[i] = (array.itemsize, array.shape if array.shape else (1,))

    def skip_buffers(self, names):
        self.set_buffers({name: np.array([]) for name in names})

    def run(self, inputs):
        """(status, outputs by name); the status of waitForCompletion when it fails."""
        self.set_buffers(inputs)
        assert self.exec_obj.setData(self.qbuffers, self.dims) == OK
        assert self.queue.enqueue(self.exec_obj) == OK
        status = self.exec_obj.waitForCompletion()
        if status != OK:
            return status, None
        status, outputs = self.exec_obj.getData()
        assert status == OK
        result = {}
        for b in self.bindings:
            if b.dir == aicapi.BUFFER_IO_TYPE_OUTPUT and self.qbuffers[b.index].size and outputs[b.index].size:
                result[b.name] = np.frombuffer(bytes(outputs[b.index]), NUMPY[b.type]).reshape(self.dims[b.index][1])
        return status, result
