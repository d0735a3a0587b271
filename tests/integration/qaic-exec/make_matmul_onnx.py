# SPDX-License-Identifier: Apache-2.0
"""Writes an ONNX model with float32 weights to argv[1]: Y1 = MatMul(X[2, 3, 64], W1[64, 40]),
Y2 = Gemm(X2[5, 64], W2[24, 64], C, alpha=0.5, beta=2, transB=1), Y3 = X2 + B[5, 64] (B is
read by an Add, so -mxfp6-matmul leaves it plain)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(5)
w1 = numpy_helper.from_array(rng.normal(0, 0.1, (64, 40)).astype(np.float32), "W1")
w2 = numpy_helper.from_array(rng.normal(0, 0.1, (24, 64)).astype(np.float32), "W2")
c = numpy_helper.from_array(np.arange(24, dtype=np.float32), "C")
b = numpy_helper.from_array(rng.normal(0, 1, (5, 64)).astype(np.float32), "B")
nodes = [
    helper.make_node("MatMul", ["X", "W1"], ["Y1"], name="mm"),
    helper.make_node("Gemm", ["X2", "W2", "C"], ["Y2"], name="fc", alpha=0.5, beta=2.0, transB=1),
    helper.make_node("Add", ["X2", "B"], ["Y3"], name="add"),
]
inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 64]),
          helper.make_tensor_value_info("X2", TensorProto.FLOAT, [5, 64])]
outputs = [helper.make_tensor_value_info("Y1", TensorProto.FLOAT, [2, 3, 40]),
           helper.make_tensor_value_info("Y2", TensorProto.FLOAT, [5, 24]),
           helper.make_tensor_value_info("Y3", TensorProto.FLOAT, [5, 64])]
graph = helper.make_graph(nodes, "matmuls", inputs, outputs, [w1, w2, c, b])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
