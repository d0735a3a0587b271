# SPDX-License-Identifier: Apache-2.0
"""Writes an ONNX model to argv[1] that the importer must reject, naming every offender at once:
two operators it lacks (Unique, NonZero), an attribute it does not know (Relu's `sharpness`) and an
attribute value it does not support (Resize's tf_crop_and_resize)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 4, 4])
outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("top", "sharp", "resized")]
nz = helper.make_tensor_value_info("nz", TensorProto.INT64, None)
roi = numpy_helper.from_array(np.array([0, 0, 0, 0, 1, 1, 1, 1], np.float32), "roi")
scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
nodes = [
    helper.make_node("Unique", ["X"], ["top"], name="unique"),
    helper.make_node("NonZero", ["X"], ["nz"], name="nonzero"),
    helper.make_node("Relu", ["X"], ["sharp"], name="relu", sharpness=2.0),
    helper.make_node("Resize", ["X", "roi", "scales"], ["resized"], name="crop",
                     coordinate_transformation_mode="tf_crop_and_resize", mode="linear"),
]
graph = helper.make_graph(nodes, "unsupported", [x], outputs + [nz], [roi, scales])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
