// SPDX-License-Identifier: Apache-2.0
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

namespace qaic::ir::rules {

Outs shapeGatherElements(const Op& op, Infos in) {
  requireMinRank(op, "src", in[0], 1);
  requireIndices(op, "indices", in[1]);
  requireRank(op, "indices", in[1], in[0].dims.size());
  const auto axis = static_cast<std::size_t>(axisParam(op, "axis", in[0].dims.size()));
  for (std::size_t i = 0; i < in[0].dims.size(); ++i) {
    if (i != axis && in[1].dims[i] > in[0].dims[i]) {
      throwInputError(op, "indices",
                      "dims " + formatDims(in[1].dims) + " exceed src " + formatDims(in[0].dims) + " outside axis " +
                          std::to_string(axis));
    }
  }
  return {TensorInfo{in[0].dtype, in[1].dims}};
}

namespace {

// GatherND / ScatterND geometry: batch dims, the index tuple length and what each tuple selects.
struct NdIndexing {
  std::size_t batch = 0;
  std::size_t tuple = 0;
};

NdIndexing ndIndexing(const Op& op, const TensorInfo& src, const TensorInfo& indices, std::size_t batch) {
  requireMinRank(op, "src", src, 1);
  requireIndices(op, "indices", indices);
  requireMinRank(op, "indices", indices, batch + 1);
  if (src.dims.size() <= batch) throwParamError(op, "batch_dims", "must be smaller than the rank of 'src'");
  for (std::size_t i = 0; i < batch; ++i) {
    if (src.dims[i] != indices.dims[i]) {
      throwInputError(op, "indices",
                      "batch dims " + formatDims(indices.dims) + " differ from src " + formatDims(src.dims));
    }
  }
  const int64_t tuple = indices.dims.back();
  if (tuple < 1 || static_cast<std::size_t>(tuple) > src.dims.size() - batch) {
    throwInputError(op, "indices",
                    "last dim " + std::to_string(tuple) + " must be 1.." + std::to_string(src.dims.size() - batch));
  }
  return {batch, static_cast<std::size_t>(tuple)};
}

}  // namespace

Outs shapeGatherNd(const Op& op, Infos in) {
  const auto batch = static_cast<std::size_t>(op.integer("batch_dims"));
  const NdIndexing nd = ndIndexing(op, in[0], in[1], batch);
  Dims out(in[1].dims.begin(), in[1].dims.end() - 1);
  out.insert(out.end(), in[0].dims.begin() + static_cast<std::ptrdiff_t>(nd.batch + nd.tuple), in[0].dims.end());
  return {TensorInfo{in[0].dtype, out}};
}

Outs shapeScatterElements(const Op& op, Infos in) {
  requireSameDType(op, "updates", in[2], in[0], "src");
  if (in[2].dims != in[1].dims) {
    throwInputError(op, "updates", "dims " + formatDims(in[2].dims) + " differ from indices " + formatDims(in[1].dims));
  }
  shapeGatherElements(op, in.first(2));
  return {in[0]};
}

Outs shapeScatterNd(const Op& op, Infos in) {
  requireSameDType(op, "updates", in[2], in[0], "src");
  const NdIndexing nd = ndIndexing(op, in[0], in[1], 0);
  Dims expected(in[1].dims.begin(), in[1].dims.end() - 1);
  expected.insert(expected.end(), in[0].dims.begin() + static_cast<std::ptrdiff_t>(nd.tuple), in[0].dims.end());
  if (in[2].dims != expected) {
    throwInputError(op, "updates", "expected " + formatDims(expected) + ", got " + formatDims(in[2].dims));
  }
  return {in[0]};
}

}  // namespace qaic::ir::rules
