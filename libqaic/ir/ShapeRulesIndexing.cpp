// Shape rules of the indexing operators (gather, scatter and their element-wise and N-D forms)
// and of cast.
#include "ir/ShapeRules.hpp"

namespace qaic::ir::rules {

void requireIndices(const Op& op, std::string_view arg, const TensorInfo& t) {
  if (t.dtype != DType::Int64 && t.dtype != DType::Int32) {
    throwInputError(op, arg, "indices must be TL_INT64 or TL_INT32, got " + std::string(dtypeName(t.dtype)));
  }
}

Outs shapeGather(const Op& op, Infos in) {
  requireMinRank(op, "src", in[0], 1);
  requireIndices(op, "indices", in[1]);
  const Dims& src = in[0].dims;
  const auto axis = static_cast<std::size_t>(axisParam(op, "axis", src.size()));
  Dims out(src.begin(), src.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), in[1].dims.begin(), in[1].dims.end());
  out.insert(out.end(), src.begin() + static_cast<std::ptrdiff_t>(axis) + 1, src.end());
  return {TensorInfo{in[0].dtype, out}};
}

Outs shapeCast(const Op& op, Infos in) {
  const auto type = parseDType(op.string("dtype"));
  if (!type) throwParamError(op, "dtype", "unknown dtype '" + op.string("dtype") + "'");
  return {TensorInfo{*type, in[0].dims}};
}

}  // namespace qaic::ir::rules
