#!/usr/bin/python3
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
