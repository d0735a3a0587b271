// SPDX-License-Identifier: Apache-2.0
// The weights side file of an IR: named tensors in one binary file, so large constants never
// live in JSON arrays. A `create` op with from_file=true takes its data from here by tensor name.
// The layout is documented in docs/formats/ir.md.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/Graph.hpp"

namespace qaic::ir {

// How a constant's bytes hold its values. Plain: elementCount(dims) * dtypeSize(dtype) bytes.
// The MXFP6 encodings (docs/formats/mxfp6.md; qaic-exec -mxfp6-matmul) hold a 2-D float weight
// whose reduction axis K is dims[reductionAxis]; `dtype` stays the logical float type.
enum class WeightEncoding : uint8_t { Plain = 0, Mxfp6E2M3 = 1, Mxfp6E3M2 = 2 };
inline constexpr uint8_t kLastWeightEncoding = 2;
std::string_view weightEncodingName(WeightEncoding encoding);  // "plain", "mxfp6-e2m3", ...

struct WeightTensor {
  std::string name;
  DType dtype = DType::Float;
  Dims dims;
  std::span<const std::byte> data;  // elementCount(dims) * dtypeSize(dtype) bytes when plain
  WeightEncoding encoding = WeightEncoding::Plain;
  uint8_t reductionAxis = 0;  // encoded: K is dims[reductionAxis] (0 or 1)
};

// A read-only, memory-mapped weights file. Opening validates the header, every entry's name,
// dtype, dims, offset and size against the file length before anything is trusted.
class WeightsFile {
 public:
  static std::unique_ptr<WeightsFile> open(const std::string& path);  // throws IrError
  ~WeightsFile();
  WeightsFile(const WeightsFile&) = delete;
  WeightsFile& operator=(const WeightsFile&) = delete;

  const WeightTensor* find(std::string_view name) const;
  const std::vector<WeightTensor>& tensors() const { return tensors_; }

 private:
  WeightsFile() = default;
  void* mapping_ = nullptr;
  std::size_t mappingSize_ = 0;
  std::vector<WeightTensor> tensors_;
};

// Writes tensors to `path` atomically (temporary file, then rename). Throws IrError.
void writeWeightsFile(const std::string& path, std::span<const WeightTensor> tensors);

// Checks every `create` op with from_file=true against `weights`: a tensor named like the op's
// dst must exist with the op's dtype and element count. Throws IrError naming the op.
void bindWeights(const Graph& graph, const WeightsFile& weights);

// The weights file of a graph: graph.weightsFile resolved against the directory of
// graph.sourceName (the IR file's path); "" when the graph names none.
std::string weightsPath(const Graph& graph);

}  // namespace qaic::ir
