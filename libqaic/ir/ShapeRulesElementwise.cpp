// Shape rules of the element-wise operators and the reductions.
#include "ir/ShapeRules.hpp"

namespace qaic::ir::rules {

Dims broadcastShapes(const Op& op, std::string_view arg, const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throwInputError(op, arg, "dims " + formatDims(b) + " do not broadcast with " +
                                   formatDims(a));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Outs shapeElew(const Op& op, Infos in) {
  requireSameDType(op, "src2", in[1], in[0], "src1");
  if (in[0].dims != in[1].dims) {
    throwInputError(op, "src2", "dims " + formatDims(in[1].dims) + " differ from src1 " +
                                    formatDims(in[0].dims) + " (elew does not broadcast)");
  }
  return {in[0]};
}

Outs shapeElewBcast(const Op& op, Infos in) {
  requireSameDType(op, "src2", in[1], in[0], "src1");
  return {TensorInfo{in[0].dtype, broadcastShapes(op, "src2", in[0].dims, in[1].dims)}};
}

Outs shapeAxis(const Op& op, Infos in) {
  axisParam(op, "axis", in[0].dims.size());
  return {in[0]};
}

Outs shapeMaxreduce(const Op& op, Infos in) {
  TensorInfo out = in[0];
  out.dims[axisParam(op, "axis", out.dims.size())] = 1;
  return {out};
}

Outs shapeMaxreduceArg(const Op& op, Infos in) {
  Outs out = shapeMaxreduce(op, in);
  out.push_back(TensorInfo{DType::Int32, out[0].dims});
  return out;
}

Outs shapeDotProduct(const Op& op, Infos in) {
  requireSameDType(op, "src2", in[1], in[0], "src1");
  if (in[0].dims != in[1].dims) {
    throwInputError(op, "src2", "dims " + formatDims(in[1].dims) + " differ from src1 " +
                                    formatDims(in[0].dims));
  }
  return {TensorInfo{in[0].dtype, Dims{1}}};
}

}  // namespace qaic::ir::rules
