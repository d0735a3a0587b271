# SPDX-License-Identifier: Apache-2.0
"""The vendor IO descriptor (aicapi.IoDesc) Qpc.getIoDescriptor() returns, parsed with the
QAicApi_pb2 the build generates from the runtime's own QAicApi.proto: the set, the bindings'
order, types, dims and sizes, and allowed_shapes of a retained-state program with two
specializations (examples/llm's exported decoder)."""

import numpy as np

import QAicApi_pb2 as aicapi
import qaicrt
from conftest import compile_ir, ir_network, relu_ir
from vendor_session import io_desc


def test_a_plain_program_has_one_default_set_and_one_shape_combination(relu16):
    desc = io_desc(relu16)
    # The runtime's C++ serializer (lite) and Python's protobuf agree byte for byte.
    assert desc.SerializeToString() == qaicrt.Qpc(str(relu16)).getIoDescriptor()[1]
    assert len(desc.io_sets) == 1 and desc.io_sets[0].name == "default"
    assert desc.selected_set == desc.io_sets[0]
    assert desc.program_name == qaicrt.Qpc(str(relu16)).getInfo().program[0].name != ""
    x, y = desc.selected_set.bindings
    assert (x.name, x.index, x.dir, x.type, list(x.dims), x.size, x.is_valid) == \
        ("x", 0, aicapi.BUFFER_IO_TYPE_INPUT, aicapi.FLOAT_TYPE, [1, 16], 64, True)
    assert (y.name, y.index, y.dir, y.type, list(y.dims), y.size, y.is_valid) == \
        ("y", 1, aicapi.BUFFER_IO_TYPE_OUTPUT, aicapi.FLOAT_TYPE, [1, 16], 64, True)
    assert not x.is_partial_buf_allowed
    assert [[(s.type, list(s.dims)) for s in shapes.shapes] for shapes in desc.allowed_shapes] == \
        [[(aicapi.FLOAT_TYPE, [1, 16]), (aicapi.FLOAT_TYPE, [1, 16])]]


# Every element type the runtime exchanges, with the vendor's code and the numpy type its callers
# map that code to (efficient-transformers' table).
TYPES = [("TL_FLOAT", aicapi.FLOAT_TYPE, np.float32), ("TL_FLOAT16", aicapi.FLOAT_16_TYPE, np.float16),
         ("TL_INT64", aicapi.INT64_I_TYPE, np.int64), ("TL_INT32", aicapi.INT32_I_TYPE, np.int32),
         ("TL_INT16", aicapi.INT16_Q_TYPE, np.int16), ("TL_INT8", aicapi.INT8_TYPE, np.int8),
         ("TL_UINT8", aicapi.UINT8_Q_TYPE, np.uint8), ("TL_BOOL", aicapi.UINT8_Q_TYPE, np.uint8)]


def test_every_exchanged_type_has_the_vendors_code_and_size(workdir):
    ops, io = [], []
    for k, (dtype, _, _) in enumerate(TYPES):
        ops.append({"name": f"r{k}", "optype": "reshape", "tensors_in": [{"arg_name": "src", "name": f"x{k}"}],
                    "tensors_out": [{"arg_name": "dst", "name": f"y{k}"}],
                    "params": [{"arg_name": "dims", "value": [6]}]})
        io.append({"name": f"x{k}", "tensor": f"x{k}", "direction": "in", "dtype": dtype, "dims": [2, 3]})
        io.append({"name": f"y{k}", "tensor": f"y{k}", "direction": "out", "dtype": dtype, "dims": [6]})
    bindings = io_desc(compile_ir(workdir, "types", ir_network(ops, io))).selected_set.bindings
    by_name = {b.name: b for b in bindings}
    for k, (dtype, code, numpy_type) in enumerate(TYPES):
        x, y = by_name[f"x{k}"], by_name[f"y{k}"]
        assert (x.type, y.type) == (code, code), dtype
        assert x.size == 6 * np.dtype(numpy_type).itemsize == y.size, dtype
    # Inputs first, then outputs, numbered in that order.
    assert [b.dir for b in bindings] == [aicapi.BUFFER_IO_TYPE_INPUT] * 8 + [aicapi.BUFFER_IO_TYPE_OUTPUT] * 8
    assert [b.index for b in bindings] == list(range(16))


def test_a_specialized_retained_state_program(config, decoder_program):
    desc = io_desc(decoder_program)
    retained = list(qaicrt.Qpc(str(decoder_program)).getInfo().retainedState)
    assert sorted(retained) == sorted(f"past_{kind}.{layer}" for layer in range(config["layers"])
                                      for kind in ("key", "value"))
    bindings = desc.selected_set.bindings
    assert desc.selected_set == desc.io_sets[0] and desc.io_sets[0].name == "default"
    names = ["input_ids", "position_ids", *retained, "logits", *[n + "_RetainedState" for n in retained]]
    assert [b.name for b in bindings] == names
    assert [b.index for b in bindings] == list(range(len(names)))
    assert [b.dir for b in bindings] == [aicapi.BUFFER_IO_TYPE_INPUT] * (2 + len(retained)) + \
        [aicapi.BUFFER_IO_TYPE_OUTPUT] * (1 + len(retained))
    head_dim = config["hidden"] // config["heads"]
    cache = [1, config["heads"], config["ctx_len"], head_dim]
    for b in bindings:
        assert b.is_valid
        assert b.is_partial_buf_allowed == b.name.startswith("past_")  # retained ones are always skipped
        if b.name.startswith("past_"):
            assert (b.type, list(b.dims), b.size) == (aicapi.FLOAT_TYPE, cache, 4 * int(np.prod(cache))), b.name
    ids = bindings[0]
    assert (ids.type, list(ids.dims), ids.size) == (aicapi.INT64_I_TYPE, [1, config["prefill_len"]],
                                                    8 * config["prefill_len"])
    logits = bindings[names.index("logits")]
    assert (logits.type, list(logits.dims)) == (aicapi.FLOAT_TYPE, [1, 1, config["vocab"]])
    # One entry per specialization (prefill, decode), one shape per binding in binding order.
    shapes = [[(s.type, list(s.dims)) for s in entry.shapes] for entry in desc.allowed_shapes]
    assert len(shapes) == 2 and all(len(entry) == len(names) for entry in shapes)
    assert [entry[0] for entry in shapes] == [(aicapi.INT64_I_TYPE, [1, config["prefill_len"]]),
                                              (aicapi.INT64_I_TYPE, [1, 1])]
    assert [entry[1][1] for entry in shapes] == [[1, config["prefill_len"]], [1, 1]]
    for entry in shapes:
        assert entry[names.index("logits")] == (aicapi.FLOAT_TYPE, [1, 1, config["vocab"]])
        for k, name in enumerate(names):
            if name.startswith("past_"):
                assert entry[k] == (aicapi.FLOAT_TYPE, cache), name
    # What efficient-transformers derives from it: batch and prefill length as the maximum of
    # input_ids' dims over the specializations, the decode length as the minimum.
    assert max(entry[0][1][1] for entry in shapes) == config["prefill_len"]
    assert min(entry[0][1][1] for entry in shapes) == 1


def test_the_container_section_stays_under_its_new_name(relu16):
    qpc = qaicrt.Qpc(str(relu16))
    section = qpc.getIoDescriptorSection()
    assert len(section) > 0 and section in bytes(qpc.buffer())
    assert section != qpc.getIoDescriptor()[1]


def test_a_partial_buffer_says_so(workdir):
    program = compile_ir(workdir, "partial", relu_ir([4, 8], is_partial_allowed=True))
    assert [b.is_partial_buf_allowed for b in io_desc(program).selected_set.bindings] == [True, True]
