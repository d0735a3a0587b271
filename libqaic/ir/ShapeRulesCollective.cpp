// SPDX-License-Identifier: Apache-2.0
// Shape rules of the collectives a multi-device program's parts exchange data with: every part
// of the program runs the same op (matched by its `collective` id), so the part count is a
// param and the result's shape follows from it alone.
#include "ir/ShapeRules.hpp"

namespace qaic::ir::rules {

Outs shapeAllReduceSum(const Op& op, Infos in) {
  if (in[0].dtype != DType::Float && in[0].dtype != DType::Float16) {
    throwInputError(op, "src", "dtype " + std::string(dtypeName(in[0].dtype)) + " is not TL_FLOAT or TL_FLOAT16");
  }
  return {in[0]};
}

Outs shapeAllGather(const Op& op, Infos in) {
  requireMinRank(op, "src", in[0], 1);
  const auto axis = static_cast<std::size_t>(axisParam(op, "axis", in[0].dims.size()));
  TensorInfo out = in[0];
  out.dims[axis] = checkedMul(op, "parts", out.dims[axis], op.integer("parts"));
  return {out};
}

}  // namespace qaic::ir::rules
