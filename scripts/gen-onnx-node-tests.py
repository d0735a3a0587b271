#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the ONNX backend node tests for the operators the importer claims.

Run with Debian's /usr/bin/python3 (python3-onnx 1.12, python3-numpy):
  gen-onnx-node-tests.py OUT --index NAME --operators OP [OP ...]
The claimed operators come from the importer's own table (the conformance test passes
qaic::onnx::supportedOperators()). The layout is the one of ONNX's own
`backend-test-tools generate-data`:
  OUT/<test_name>/model.onnx
  OUT/<test_name>/test_data_set_<i>/input_<j>.pb, output_<j>.pb
plus OUT/NAME listing every written test as "<test_name> <operator>", written last. A test is
written when every node of its model is a claimed operator. An `_expanded` case (an operator's
function body built from other operators) counts for the operator it expands, and is written
only when that operator is claimed too.

With --fuzz-corpus, writes only the models of FUZZ_SEEDS as OUT/<test_name>.onnx: the seed
corpus of the onnx_import libFuzzer target (tests/fuzz/corpus/onnx_import/).
"""
import argparse
import os
import shutil
import sys

import numpy as np

# python3-onnx 1.12 predates NumPy 1.24, which removed these aliases; its test-case modules
# still use them at import time.
for _alias, _type in (("float", float), ("int", int), ("bool", bool), ("object", object),
                      ("str", str), ("complex", complex)):
    if _alias not in np.__dict__:
        setattr(np, _alias, _type)

import onnx  # noqa: E402
import onnx.backend.test.case.node as node_cases  # noqa: E402
from onnx import numpy_helper  # noqa: E402

# Small models that together reach every importer path worth mutating.
FUZZ_SEEDS = (
    "test_relu", "test_conv_with_strides_padding", "test_maxpool_2d_ceil",
    "test_averagepool_2d_pads_count_include_pad", "test_softmax_axis_1", "test_gemm_default_vector_bias",
    "test_concat_3d_axis_1", "test_constant_pad", "test_reshape_negative_dim", "test_batchnorm_example",
    "test_flatten_axis1", "test_clip_example", "test_dropout_default_mask", "test_transpose_default",
)


def folding_seeds():
    """Models with initializers: conv + batchnorm folding and Shape->Reshape arithmetic."""
    from onnx import helper, TensorProto
    rng = np.random.default_rng(7)

    def init(name, array):
        return numpy_helper.from_array(np.asarray(array), name)

    conv_bn = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"])],
        "conv_bn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [init("w", rng.standard_normal((2, 1, 3, 3)).astype(np.float32))]
        + [init(n, rng.uniform(0.5, 1.5, 2).astype(np.float32)) for n in ("s", "b", "m", "v")])
    shape_math = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]),
         helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
         helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
         helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
         helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "shape_math",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [init("zero", np.array(0, np.int64)), init("axes", np.array([0], np.int64)),
         init("minus1", np.array([-1], np.int64))])
    opset = [helper.make_operatorsetid("", 13)]
    return {name: helper.make_model(graph, opset_imports=opset)
            for name, graph in (("seed_conv_bn_fold", conv_bn), ("seed_shape_math", shape_math))}


class Case:
    """A node test of this project's, in the form ONNX's test cases have."""

    def __init__(self, name, model, data_sets):
        self.name, self.model, self.data_sets, self.kind = name, model, data_sets, "node"


def newer_opset_cases():
    """Operator versions of opsets 18 to 21, which python3-onnx 1.12 has no test cases for and
    which newer exporters write (torch.onnx.dynamo_export starts at opset 18): the operator's
    parameters as initializers, expected outputs computed here with numpy."""
    from onnx import helper, TensorProto
    rng = np.random.default_rng(18)
    x = rng.standard_normal((2, 6, 4, 5)).astype(np.float32)

    def ints(values):
        return np.array(values, dtype=np.int64)

    def case(name, opset, nodes, expected, initializers=(), data=(("x", x),)):
        graph = helper.make_graph(
            nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in data],
            [helper.make_tensor_value_info(f"y{i}" if len(expected) > 1 else "y", TensorProto.FLOAT, None)
             for i in range(len(expected))],
            [numpy_helper.from_array(np.asarray(v), k) for k, v in initializers])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8 if opset < 19 else 9 if opset < 21 else 10
        outputs = [np.asarray(e, dtype=np.float32) for e in expected]
        return Case(f"test_qaic_{name}_opset{opset}", model, [([a for _, a in data], outputs)])

    node = helper.make_node
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    grouped = x.reshape(2, 3, 2, 4, 5)
    g_mean = grouped.mean(axis=(2, 3, 4), keepdims=True)
    g_norm = (grouped - g_mean) / np.sqrt(grouped.var(axis=(2, 3, 4), keepdims=True) + 1e-5)
    g_scale, g_bias = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    c_scale, c_bias = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    erf = np.vectorize(__import__("math").erf)
    # Einsum diagonals: infinities off the diagonal must not reach the result (a 0/1 mask times
    # them would give NaN).
    square = rng.standard_normal((2, 3, 3)).astype(np.float32)
    square[:, 0, 2], square[:, 1, 0] = np.inf, -np.inf
    row = rng.standard_normal((2, 4)).astype(np.float32)

    def linear_asymmetric(a, axis, scale):
        # Upsample's linear mode (Resize-10): source coordinate i / scale, the last one repeated.
        n = a.shape[axis]
        src = np.arange(int(np.floor(n * scale))) / scale
        low = np.floor(src).astype(np.int64)
        high = np.minimum(low + 1, n - 1)
        shape = [1] * a.ndim
        shape[axis] = -1
        frac = (src - low).reshape(shape).astype(np.float32)
        return np.take(a, low, axis) * (1 - frac) + np.take(a, high, axis) * frac


    def complex_last(z):
        return np.stack([z.real, z.imag], -1).astype(np.float32)

    def frames(signal, length, step):
        count = (signal.shape[1] - length) // step + 1
        return np.stack([signal[:, i * step:i * step + length] for i in range(count)], 1)

    signal = rng.standard_normal((2, 64, 1)).astype(np.float32)
    complex_signal = rng.standard_normal((1, 40, 2)).astype(np.float32)
    as_complex = complex_signal[..., 0] + 1j * complex_signal[..., 1]
    hann16 = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(16) / 16)
    hamming10 = 25 / 46 - 21 / 46 * np.cos(2 * np.pi * np.arange(10) / 9)
    samples = rng.standard_normal((2, 5, 3, 1)).astype(np.float32)
    spectrum = rng.standard_normal((1, 6, 2, 2)).astype(np.float32)
    line10, line12 = rng.standard_normal(10).astype(np.float32), rng.standard_normal(12).astype(np.float32)
    def integer_conv(xq, wq, stride, pad, group):
        # int64 reference of a 2-D convolution with symmetric padding and groups.
        n, cin, h, w_ = xq.shape
        m, cpg, kh, kw = wq.shape
        padded = np.pad(xq, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        oh, ow = (h + 2 * pad - kh) // stride + 1, (w_ + 2 * pad - kw) // stride + 1
        out = np.zeros((n, m, oh, ow), np.int64)
        per_group = m // group
        for o in range(m):
            g = o // per_group
            for i in range(oh):
                for j in range(ow):
                    window = padded[:, g * cpg:(g + 1) * cpg, i * stride:i * stride + kh, j * stride:j * stride + kw]
                    out[:, o, i, j] = (window * wq[o]).sum(axis=(1, 2, 3))
        return out

    xq = rng.integers(0, 256, (2, 4, 7, 6)).astype(np.uint8)
    wq = rng.integers(-127, 128, (6, 2, 3, 3)).astype(np.int8)
    x_zero, y_zero = np.uint8(120), np.uint8(100)
    w_scales = rng.uniform(0.002, 0.01, 6).astype(np.float32)
    w_zeros = np.zeros(6, np.int8)
    bias = rng.integers(-2000, 2000, 6).astype(np.int32)
    x_scale, y_scale = np.float32(0.02), np.float32(0.05)
    accumulated = integer_conv(xq.astype(np.int64) - int(x_zero), wq.astype(np.int64), 2, 1, 2) + bias[None, :, None, None]
    requantized = np.round(accumulated * (x_scale * w_scales[None, :, None, None] / y_scale)) + int(y_zero)
    qlinear_expected = np.clip(requantized, 0, 255).astype(np.uint8)

    def int_case(name, opset, nodes, expected, initializers, data):
        graph = helper.make_graph(
            nodes, name,
            [helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape) for n, a in data],
            [helper.make_tensor_value_info("y", onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[expected.dtype], None)],
            [numpy_helper.from_array(np.asarray(v), k) for k, v in initializers])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        return Case(f"test_qaic_{name}_opset{opset}", model, [([a for _, a in data], [expected])])

    return [
        int_case("qlinearconv_per_channel_grouped_strided", 13,
                 [node("QLinearConv", ["x", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero", "b"],
                       ["y"], strides=[2, 2], pads=[1, 1, 1, 1], group=2)],
                 qlinear_expected,
                 [("x_scale", x_scale), ("x_zero", x_zero), ("w", wq), ("w_scale", w_scales), ("w_zero", w_zeros),
                  ("y_scale", y_scale), ("y_zero", y_zero), ("b", bias)],
                 (("x", xq),)),
        case("stft_hann_window", 17,
             [node("HannWindow", ["size"], ["w"]), node("STFT", ["x", "step", "w"], ["y"])],
             [complex_last(np.fft.rfft(frames(signal[..., 0], 16, 4) * hann16, axis=-1))],
             [("size", np.array(16, np.int64)), ("step", np.array(4, np.int64))], data=(("x", signal),)),
        case("stft_complex_two_sided", 17, [node("STFT", ["x", "step", "", "length"], ["y"], onesided=0)],
             [complex_last(np.fft.fft(frames(as_complex, 8, 5), axis=-1))],
             [("step", np.array(5, np.int64)), ("length", np.array(8, np.int64))], data=(("x", complex_signal),)),
        case("window_hamming_symmetric", 17,
             [node("HammingWindow", ["size"], ["w"], periodic=0), node("Mul", ["x", "w"], ["y"])],
             [line10 * hamming10], [("size", np.array(10, np.int64))], data=(("x", line10),)),
        case("window_blackman_periodic", 17, [node("BlackmanWindow", ["size"], ["w"]), node("Mul", ["x", "w"], ["y"])],
             [line12 * np.blackman(13)[:-1]], [("size", np.array(12, np.int64))], data=(("x", line12),)),
        case("dft_length_pads_axis_2", 17, [node("DFT", ["x", "n"], ["y"], axis=2)],
             [complex_last(np.fft.fft(samples[..., 0], n=6, axis=2))], [("n", np.array(6, np.int64))],
             data=(("x", samples),)),
        case("dft_onesided_truncates", 17, [node("DFT", ["x", "n"], ["y"], axis=1, onesided=1)],
             [complex_last(np.fft.rfft(samples[..., 0], n=4, axis=1))], [("n", np.array(4, np.int64))],
             data=(("x", samples),)),
        case("dft_inverse_axis_input", 20, [node("DFT", ["x", "", "axis"], ["y"], inverse=1)],
             [complex_last(np.fft.ifft(spectrum[..., 0] + 1j * spectrum[..., 1], axis=1))],
             [("axis", np.array(-3, np.int64))], data=(("x", spectrum),)),
        case("upsample_nearest_scales_attribute", 7,
             [node("Upsample", ["x"], ["y"], mode="nearest", scales=[1.0, 1.0, 2.0, 3.0])],
             [x.repeat(2, axis=2).repeat(3, axis=3)]),
        case("upsample_linear_scales_initializer", 9, [node("Upsample", ["x", "scales"], ["y"], mode="linear")],
             [linear_asymmetric(linear_asymmetric(x, 2, 2.0), 3, 2.5)],
             [("scales", np.array([1, 1, 2, 2.5], np.float32))]),
        case("einsum_diagonal_beside_infinities", 12, [node("Einsum", ["d"], ["y"], equation="bii->bi")],
             [np.einsum("bii->bi", square)], data=(("d", square),)),
        case("einsum_trace_times_operand", 12, [node("Einsum", ["d", "r"], ["y"], equation="bii,bj->bj")],
             [np.einsum("bii,bj->bj", np.nan_to_num(square, posinf=0, neginf=0), row)],
             data=(("d", np.nan_to_num(square, posinf=0, neginf=0)), ("r", row))),
        case("reducemean_axes_input", 18, [node("ReduceMean", ["x", "axes"], ["y"])],
             [x.mean(axis=(1, 3), keepdims=True)], [("axes", ints([1, 3]))]),
        case("reducemax_axes_input", 18, [node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)],
             [x.max(axis=2)], [("axes", ints([-2]))]),
        case("reducel2_axes_input", 18, [node("ReduceL2", ["x", "axes"], ["y"])],
             [np.sqrt((x ** 2).sum(axis=0, keepdims=True))], [("axes", ints([0]))]),
        case("reducesum_empty_axes_noop", 18, [node("ReduceSum", ["x", "axes"], ["y"], noop_with_empty_axes=1)],
             [x], [("axes", ints([]))]),
        case("layernorm_decomposed", 18,
             [node("ReduceMean", ["x", "axes"], ["m"]), node("Sub", ["x", "m"], ["d"]),
              node("Pow", ["d", "two"], ["d2"]), node("ReduceMean", ["d2", "axes"], ["v"]),
              node("Add", ["v", "eps"], ["ve"]), node("Sqrt", ["ve"], ["s"]), node("Div", ["d", "s"], ["y"])],
             [(x - mean) / np.sqrt(var + 1e-5)],
             [("axes", ints([-1])), ("two", np.float32(2)), ("eps", np.float32(1e-5))]),
        case("split_num_outputs", 18, [node("Split", ["x"], ["y0", "y1", "y2"], axis=1, num_outputs=3)],
             np.split(x, 3, axis=1)),
        case("split_num_outputs_uneven", 18, [node("Split", ["x"], ["y0", "y1"], axis=3, num_outputs=2)],
             [x[..., :3], x[..., 3:]]),
        case("pad_axes_input", 18, [node("Pad", ["x", "pads", "", "axes"], ["y"], mode="reflect")],
             [np.pad(x, ((0, 0), (0, 0), (1, 2), (2, 1)), mode="reflect")],
             [("pads", ints([1, 2, 2, 1])), ("axes", ints([2, 3]))]),
        case("pad_negative_crops", 18, [node("Pad", ["x", "pads"], ["y"])],
             [np.pad(x[:, :, 1:, :-2], ((0, 0), (1, 0), (0, 2), (1, 0)))],
             [("pads", ints([0, 1, -1, 1, 0, 0, 2, -2]))]),
        case("pad_wrap", 19, [node("Pad", ["x", "pads"], ["y"], mode="wrap")],
             [np.pad(x, ((0, 0), (0, 0), (1, 2), (2, 1)), mode="wrap")], [("pads", ints([0, 0, 1, 2, 0, 0, 2, 1]))]),
        case("mish", 18, [node("Mish", ["x"], ["y"])], [x * np.tanh(np.log1p(np.exp(x)))]),
        case("gelu", 20, [node("Gelu", ["x"], ["y"])], [0.5 * x * (1 + erf(x / np.sqrt(2)))]),
        case("gelu_tanh", 20, [node("Gelu", ["x"], ["y"], approximate="tanh")],
             [0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))]),
        case("groupnormalization_per_group", 18,
             [node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=3, epsilon=1e-5)],
             [(g_norm * g_scale[None, :, None, None, None] + g_bias[None, :, None, None, None]).reshape(x.shape)],
             [("scale", g_scale), ("bias", g_bias)]),
        case("groupnormalization_per_channel", 21,
             [node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=3, epsilon=1e-5)],
             [g_norm.reshape(x.shape) * c_scale[None, :, None, None] + c_bias[None, :, None, None]],
             [("scale", c_scale), ("bias", c_bias)]),
        case("resize_axes", 18, [node("Resize", ["x", "", "scales"], ["y"], mode="nearest", axes=[2, 3])],
             [x.repeat(2, axis=2).repeat(2, axis=3)], [("scales", np.array([2, 2], np.float32))]),
        case("resize_not_larger", 18,
             [node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", axes=[2, 3],
                   keep_aspect_ratio_policy="not_larger")],
             [x.repeat(2, axis=2).repeat(2, axis=3)], [("sizes", ints([8, 12]))]),
        case("averagepool_dilations", 19,
             [node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])],
             [(x[:, :, 0:2, 0:3] + x[:, :, 2:4, 0:3] + x[:, :, 0:2, 2:5] + x[:, :, 2:4, 2:5]) / 4]),
    ]


def write_tensor(path, array, name):
    with open(path, "wb") as out:
        out.write(numpy_helper.from_array(np.asarray(array), name).SerializeToString())


def write_case(root, case):
    case_dir = os.path.join(root, case.name)
    if os.path.exists(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as out:
        out.write(case.model.SerializeToString())
    graph = case.model.graph
    for index, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = os.path.join(case_dir, f"test_data_set_{index}")
        os.makedirs(data_dir)
        for j, value in enumerate(inputs):
            write_tensor(os.path.join(data_dir, f"input_{j}.pb"), value, graph.input[j].name)
        for j, value in enumerate(outputs):
            write_tensor(os.path.join(data_dir, f"output_{j}.pb"), value, graph.output[j].name)


def operator_of(case, by_name):
    """The operator a case tests: its node's, or for an expansion the expanded case's."""
    if case.name.endswith("_expanded"):
        original = by_name.get(case.name[:-len("_expanded")])
        return original.model.graph.node[0].op_type if original is not None else None
    return case.model.graph.node[0].op_type


def is_claimed(case, claimed, by_name):
    if case.kind != "node" or case.model is None or not case.model.graph.node:
        return False
    op_types = {node.op_type for node in case.model.graph.node}
    return op_types <= claimed and operator_of(case, by_name) in claimed


def only_tensor_io(case):
    graph = case.model.graph
    return all(v.type.HasField("tensor_type") for v in list(graph.input) + list(graph.output))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output", help="directory to write the tests into")
    parser.add_argument("--fuzz-corpus", action="store_true", help="write only the fuzz seed models")
    parser.add_argument("--index", default="index.txt", help="name of the index file, written last")
    parser.add_argument("--operators", nargs="*", default=[], help="the claimed operators")
    args = parser.parse_args()

    collected = [c for c in node_cases.collect_testcases(None) if c.kind == "node" and c.model is not None]
    collected += newer_opset_cases()
    by_name = {c.name: c for c in collected}
    os.makedirs(args.output, exist_ok=True)
    if args.fuzz_corpus:
        for case in collected:
            if case.name in FUZZ_SEEDS:
                with open(os.path.join(args.output, case.name + ".onnx"), "wb") as out:
                    out.write(case.model.SerializeToString())
        for name, model in folding_seeds().items():
            with open(os.path.join(args.output, name + ".onnx"), "wb") as out:
                out.write(model.SerializeToString())
        return 0
    if not args.operators:
        parser.error("--operators is required")
    claimed = set(args.operators)
    cases = [c for c in collected if is_claimed(c, claimed, by_name) and only_tensor_io(c)]
    for case in cases:
        write_case(args.output, case)
    index_path = os.path.join(args.output, args.index)
    with open(index_path + ".tmp", "w") as out:
        for case in sorted(cases, key=lambda c: c.name):
            out.write(f"{case.name} {operator_of(case, by_name)}\n")
    os.replace(index_path + ".tmp", index_path)
    print(f"wrote {len(cases)} ONNX node tests to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
