// SPDX-License-Identifier: Apache-2.0
// Out-of-range indices of gather, gather_elements, gather_nd, scatter_elements and scatter_nd
// (docs/llm.md, "Out-of-range indices"): INT32_MAX in an int32 or int64 index tensor is the
// invalid-row marker (a scatter writes nothing, a gather reads zeros), negative indices count from
// the end as in ONNX, and any other index outside its axis fails the run naming the op and index.
#include <gtest/gtest.h>

#include <limits>

#include "GraphBuilder.hpp"

namespace qaic::kernels::test {
namespace {

constexpr int64_t kMarker = std::numeric_limits<int32_t>::max();

// Index tensors come in both types the kernels take (the IR's dtype name is the parameter); each
// case runs with both.
class KernelsIndexMarker : public ::testing::TestWithParam<std::string> {
 protected:
  std::string indexType() const { return GetParam(); }
  HostTensor indexTensor(ir::Dims dims, const std::vector<int64_t>& values) const {
    if (GetParam() == "TL_INT64") return HostTensor::of(ir::DType::Int64, std::move(dims), values);
    std::vector<int32_t> narrow(values.begin(), values.end());
    return HostTensor::of(ir::DType::Int32, std::move(dims), narrow);
  }
};

INSTANTIATE_TEST_SUITE_P(IndexTypes, KernelsIndexMarker, ::testing::Values("TL_INT32", "TL_INT64"),
                         [](const auto& info) { return info.param == "TL_INT32" ? "Int32" : "Int64"; });

std::vector<float> iota(std::size_t count, float first) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = first + static_cast<float>(i);
  return values;
}

// A KV cache as the vendor's CtxScatter writes it: data [batch 1, heads 2, ctx 4, head_dim 2],
// one (batch, head, position) tuple per row of updates [1, 2, 3, 2].
struct CacheWrite {
  GraphBuilder graph;
  HostTensor cache = HostTensor::of(ir::DType::Float, {1, 2, 4, 2}, iota(16, 100));
  HostTensor updates = HostTensor::of(ir::DType::Float, {1, 2, 3, 2}, iota(12, 0));

  explicit CacheWrite(const std::string& indexType) {
    graph.input("cache", "TL_FLOAT", {1, 2, 4, 2})
        .input("indices", indexType, {1, 2, 3, 3})
        .input("updates", "TL_FLOAT", {1, 2, 3, 2})
        .op("write", "scatter_nd", {{"src", "cache"}, {"indices", "indices"}, {"updates", "updates"}},
            {{"dst", "written"}}, {{"reduction", "none"}})
        .output("written", "TL_FLOAT", {1, 2, 4, 2});
  }
  // The tuples of `positions` (one per update row) for each head.
  static std::vector<int64_t> tuples(const std::vector<int64_t>& positions) {
    std::vector<int64_t> values;
    for (int64_t head = 0; head < 2; ++head) {
      for (const int64_t position : positions) values.insert(values.end(), {0, head, position});
    }
    return values;
  }
};

std::string runError(const ir::Graph& graph, const std::vector<HostTensor>& inputs) {
  try {
    runGraph(graph, inputs);
  } catch (const ExecutionError& e) {
    return e.what();
  }
  return "";
}

TEST_P(KernelsIndexMarker, ScatterNdWritesNothingForAMarkedRow) {
  CacheWrite w(indexType());
  const auto written = runGraph(w.graph.graph(),
                                {w.cache, indexTensor({1, 2, 3, 3}, CacheWrite::tuples({1, kMarker, 2})), w.updates})
                           .at(0)
                           .values<float>();
  // Head h: position 0 and 3 keep the cache, 1 and 2 take update rows 0 and 2; row 1 is dropped.
  const std::vector<float> expected{100, 101, 0, 1, 4, 5, 106, 107, 108, 109, 6, 7, 10, 11, 114, 115};
  EXPECT_EQ(written, expected);
}

TEST_P(KernelsIndexMarker, ScatterNdMinusOneWritesTheLastPositionAsOnnxSays) {
  CacheWrite w(indexType());
  const auto written = runGraph(w.graph.graph(),
                                {w.cache, indexTensor({1, 2, 3, 3}, CacheWrite::tuples({0, 1, -1})), w.updates})
                           .at(0)
                           .values<float>();
  const std::vector<float> expected{0, 1, 2, 3, 104, 105, 4, 5, 6, 7, 8, 9, 112, 113, 10, 11};
  EXPECT_EQ(written, expected);
}

TEST_P(KernelsIndexMarker, ScatterNdOtherIndicesPastTheCacheAreNamedErrors) {
  for (const int64_t position : {int64_t{4}, int64_t{-5}, kMarker - 1}) {
    CacheWrite w(indexType());
    const std::string error = runError(
        w.graph.graph(), {w.cache, indexTensor({1, 2, 3, 3}, CacheWrite::tuples({0, position, 1})), w.updates});
    EXPECT_NE(error.find("op 'write' (scatter_nd)"), std::string::npos) << error;
    EXPECT_NE(error.find("index " + std::to_string(position) + " at position 5 is out of range [-4, 4)"),
              std::string::npos)
        << error;
  }
}

TEST_P(KernelsIndexMarker, GatherNdAsCtxGatherReadsZerosAtMarkedPositions) {
  // data [1, 2, 4, 2], indices [1, 2, 4, 1], batch_dims 2: each head reads positions 0..1 and the
  // marker for 2..3 (a query at position 1 sees no further).
  GraphBuilder b;
  b.input("cache", "TL_FLOAT", {1, 2, 4, 2})
      .input("indices", indexType(), {1, 2, 4, 1})
      .op("read", "gather_nd", {{"src", "cache"}, {"indices", "indices"}}, {{"dst", "read"}}, {{"batch_dims", 2}})
      .output("read", "TL_FLOAT", {1, 2, 4, 2});
  const HostTensor cache = HostTensor::of(ir::DType::Float, {1, 2, 4, 2}, iota(16, 1));
  const auto read = runGraph(b.graph(), {cache, indexTensor({1, 2, 4, 1}, {0, 1, kMarker, kMarker, 1, -1, kMarker, 0})})
                        .at(0)
                        .values<float>();
  const std::vector<float> expected{1, 2, 3, 4, 0, 0, 0, 0, 11, 12, 15, 16, 0, 0, 9, 10};
  EXPECT_EQ(read, expected);
  const std::string error = runError(b.graph(), {cache, indexTensor({1, 2, 4, 1}, {0, 1, 4, 0, 0, 0, 0, 0})});
  EXPECT_NE(error.find("op 'read' (gather_nd): input 'indices': index 4 at position 2 is out of range [-4, 4)"),
            std::string::npos)
      << error;
}

TEST_P(KernelsIndexMarker, GatherReadsZerosForTheMarkerAndCountsNegativesFromTheEnd) {
  GraphBuilder b;
  b.input("table", "TL_FLOAT", {3, 2})
      .input("indices", indexType(), {4})
      .op("lookup", "gather", {{"src", "table"}, {"indices", "indices"}}, {{"dst", "rows"}}, {{"axis", 0}})
      .output("rows", "TL_FLOAT", {4, 2});
  const HostTensor table = HostTensor::of(ir::DType::Float, {3, 2}, iota(6, 1));
  EXPECT_EQ(runGraph(b.graph(), {table, indexTensor({4}, {2, kMarker, -1, 0})}).at(0).values<float>(),
            (std::vector<float>{5, 6, 0, 0, 5, 6, 1, 2}));
  const std::string error = runError(b.graph(), {table, indexTensor({4}, {0, 3, 0, 0})});
  EXPECT_NE(error.find("op 'lookup' (gather): input 'indices': index 3 at position 1 is out of range [-3, 3)"),
            std::string::npos)
      << error;
}

TEST_P(KernelsIndexMarker, GatherElementsReadsZerosForTheMarker) {
  GraphBuilder b;
  b.input("src", "TL_INT32", {2, 3})
      .input("indices", indexType(), {2, 2})
      .op("pick", "gather_elements", {{"src", "src"}, {"indices", "indices"}}, {{"dst", "picked"}}, {{"axis", 1}})
      .output("picked", "TL_INT32", {2, 2});
  const HostTensor src = HostTensor::of(ir::DType::Int32, {2, 3}, std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(runGraph(b.graph(), {src, indexTensor({2, 2}, {kMarker, 2, -3, kMarker})}).at(0).values<int32_t>(),
            (std::vector<int32_t>{0, 3, 4, 0}));
  const std::string error = runError(b.graph(), {src, indexTensor({2, 2}, {0, 0, -4, 0})});
  EXPECT_NE(error.find("op 'pick' (gather_elements): input 'indices': index -4 at position 2"), std::string::npos)
      << error;
}

TEST_P(KernelsIndexMarker, ScatterElementsWritesNothingForTheMarker) {
  GraphBuilder b;
  b.input("cache", "TL_FLOAT", {1, 5})
      .input("indices", indexType(), {1, 3})
      .input("updates", "TL_FLOAT", {1, 3})
      .op("write", "scatter_elements", {{"src", "cache"}, {"indices", "indices"}, {"updates", "updates"}},
          {{"dst", "written"}}, {{"axis", 1}, {"reduction", "none"}})
      .output("written", "TL_FLOAT", {1, 5});
  const HostTensor cache = HostTensor::of(ir::DType::Float, {1, 5}, iota(5, 10));
  const HostTensor updates = HostTensor::of(ir::DType::Float, {1, 3}, std::vector<float>{1, 2, 3});
  EXPECT_EQ(runGraph(b.graph(), {cache, indexTensor({1, 3}, {0, kMarker, -1}), updates}).at(0).values<float>(),
            (std::vector<float>{1, 11, 12, 13, 3}));
  const std::string error = runError(b.graph(), {cache, indexTensor({1, 3}, {0, 5, 1}), updates});
  EXPECT_NE(error.find("op 'write' (scatter_elements): input 'indices': index 5 at position 1 is out of range"),
            std::string::npos)
      << error;
}

// Only INT32_MAX itself is the marker: in an int64 tensor the values around it are plain
// out-of-range indices.
TEST(KernelsIndexMarkerInt64, ValuesBeyondTheMarkerAreErrors) {
  for (const int64_t position : {kMarker + 1, std::numeric_limits<int64_t>::max()}) {
    CacheWrite w("TL_INT64");
    const std::string error = runError(
        w.graph.graph(),
        {w.cache, HostTensor::of(ir::DType::Int64, {1, 2, 3, 3}, CacheWrite::tuples({position, 0, 1})), w.updates});
    EXPECT_NE(error.find("index " + std::to_string(position) + " at position 2 is out of range"), std::string::npos)
        << error;
  }
}

}  // namespace
}  // namespace qaic::kernels::test
