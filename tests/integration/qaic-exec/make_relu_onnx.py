# SPDX-License-Identifier: Apache-2.0
"""Writes a one-node ONNX model, Relu over input X of shape [N, 4] (N symbolic), to argv[1]."""
import sys

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])
y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 4])
graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu")], "relu", [x], [y])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
