// SPDX-License-Identifier: Apache-2.0
// gather, gather_elements, gather_nd, scatter_elements, scatter_nd. Indices are runtime data:
// every one is checked against its axis (negative ones count from the end, as in ONNX), and an
// out-of-range index fails the run with an error naming the op, the index and where it was.
// One out-of-range value is not an error: INT32_MAX, efficient-transformers' mark of a KV-cache
// row not to write and a cache position not to read. A scatter writes nothing for it and a
// gather reads zeros (docs/llm.md, "Out-of-range indices").
#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"
#include "kernels/ops/NdGather.hpp"

namespace qaic::kernels::ops {
namespace {

constexpr std::size_t kParallelGatherBytes = std::size_t{4} << 20;

// Reads index `k` of an int64 or int32 tensor.
class IndexReader {
 public:
  explicit IndexReader(const Tensor& t) : t_(t), wide_(t.dtype == ir::DType::Int64) {}
  int64_t operator[](int64_t k) const { return wide_ ? t_.as<int64_t>()[k] : t_.as<int32_t>()[k]; }

 private:
  const Tensor& t_;
  bool wide_;
};

void requireIndexTensor(const BuildContext& ctx, std::string_view arg) {
  requireDTypes(ctx.op, arg, ctx.input(arg).dtype, {ir::DType::Int64, ir::DType::Int32});
}

// What the gathers share: src read at the places `indices` name, into dst of src's dtype.
struct Gather {
  const Tensor& src;
  const Tensor& indices;
  Tensor& dst;
};

Gather gatherTensors(const BuildContext& ctx) {
  Gather g{ctx.input("src"), ctx.input("indices"), ctx.output("dst")};
  requireIndexTensor(ctx, "indices");
  if (g.src.dtype != g.dst.dtype) throwKernelError(ctx.op, "output dtype differs from input 'src'");
  return g;
}

// The invalid-row marker, the same value in int32 and int64 index tensors: the vendor's exports
// build it as torch.iinfo(torch.int32).max whatever the position ids' type.
constexpr int64_t kInvalidRowMarker = std::numeric_limits<int32_t>::max();

// resolveIndex, except that the marker, when it is beyond the axis, resolves to kNoElement.
int64_t resolveMarkedIndex(const ir::Op& op, std::string_view arg, int64_t index, int64_t position, int64_t extent) {
  if (index == kInvalidRowMarker && index >= extent) return kNoElement;
  return resolveIndex(op, arg, index, position, extent);
}

}  // namespace

// `index` (read at position `position` of input `arg`) resolved against an axis of `extent`.
AxisView checkedAxisView(const ir::Op& op, const ir::Dims& dims, std::string_view arg) {
  const int64_t axis = op.integer(arg);
  if (axis < 0 || static_cast<std::size_t>(axis) >= dims.size()) {
    throwKernelError(op, "param '" + std::string(arg) + "': " + std::to_string(axis) + " is not an axis of a rank-" +
                             std::to_string(dims.size()) + " tensor");
  }
  return axisView(dims, static_cast<std::size_t>(axis));
}

int64_t resolveIndex(const ir::Op& op, std::string_view arg, int64_t index, int64_t position, int64_t extent) {
  if (index < -extent || index >= extent) {
    throwKernelError(op, "input '" + std::string(arg) + "': index " + std::to_string(index) + " at position " +
                             std::to_string(position) + " is out of range [" + std::to_string(-extent) + ", " +
                             std::to_string(extent) + ")");
  }
  return index < 0 ? index + extent : index;
}

std::unique_ptr<Kernel> makeGather(const BuildContext& ctx) {
  // Named references, not structured bindings: clang 14 cannot capture those in a lambda.
  const Gather g = gatherTensors(ctx);
  const Tensor& src = g.src;
  const Tensor& indices = g.indices;
  Tensor& dst = g.dst;
  const AxisView v = checkedAxisView(ctx.op, src.dims);
  const int64_t outer = v.outer, extent = v.extent;
  const std::size_t chunk = static_cast<std::size_t>(v.inner) * ir::dtypeSize(src.dtype);
  const ir::Op& op = ctx.op;
  return makeKernel([&op, &src, &indices, &dst, outer, extent, chunk] {
    const IndexReader index(indices);
    const int64_t count = indices.count();
    // Check every index first: a failing run writes nothing.
    for (int64_t k = 0; k < count; ++k) resolveMarkedIndex(op, "indices", index[k], k, extent);
    std::byte* out = dst.data();
    for (int64_t o = 0; o < outer; ++o) {
      const std::byte* block = src.data() + static_cast<std::size_t>(o * extent) * chunk;
      for (int64_t k = 0; k < count; ++k) {
        const int64_t i = resolveMarkedIndex(op, "indices", index[k], k, extent);
        if (i == kNoElement) {
          std::memset(out, 0, chunk);
        } else {
          std::memcpy(out, block + static_cast<std::size_t>(i) * chunk, chunk);
        }
        out += chunk;
      }
    }
  });
}

}  // namespace qaic::kernels::ops

namespace qaic::kernels::ops {
namespace {

enum class ScatterReduction { None, Add, Mul, Max, Min };

ScatterReduction parseReduction(const ir::Op& op) {
  const std::string& name = op.string("reduction");
  if (name == "none") return ScatterReduction::None;
  if (name == "add") return ScatterReduction::Add;
  if (name == "mul") return ScatterReduction::Mul;
  if (name == "max") return ScatterReduction::Max;
  if (name == "min") return ScatterReduction::Min;
  throwKernelError(op, "param 'reduction': unknown value '" + name + "'");
}

// target = target (reduction) value, in the element type (float16 and bool through double).
template <typename T>
void combine(T& target, T value, ScatterReduction r) {
  if constexpr (std::is_arithmetic_v<T>) {
    switch (r) {
      case ScatterReduction::None: target = value; return;
      case ScatterReduction::Add: target = static_cast<T>(target + value); return;
      case ScatterReduction::Mul: target = static_cast<T>(target * value); return;
      case ScatterReduction::Max: target = std::max(target, value); return;
      case ScatterReduction::Min: target = std::min(target, value); return;
    }
  } else {
    double t = toDouble(target);
    combine(t, toDouble(value), r);
    target = fromDouble<T>(t);
  }
}

// Source offsets of the element-wise forms: every axis but `axis` follows the indices tensor's
// position, so the offset is `base` (from strides with the axis zeroed) + index * axis stride.
struct ElementwiseIndexing {
  std::vector<int64_t> strides;  // of the source, zero along the axis
  int64_t axisStride = 0;
  int64_t extent = 0;
};

ElementwiseIndexing elementwiseIndexing(const BuildContext& ctx, const Tensor& src, const Tensor& indices) {
  const AxisView v = checkedAxisView(ctx.op, src.dims);
  if (indices.dims.size() != src.dims.size()) throwKernelError(ctx.op, "input 'indices': rank differs from 'src'");
  const auto axis = static_cast<std::size_t>(ctx.op.integer("axis"));
  ElementwiseIndexing e{rowMajorStrides(src.dims), 0, v.extent};
  e.axisStride = e.strides[axis];
  e.strides[axis] = 0;
  for (std::size_t i = 0; i < src.dims.size(); ++i) {
    if (i != axis && indices.dims[i] > src.dims[i]) throwKernelError(ctx.op, "input 'indices': dims exceed 'src'");
  }
  return e;
}

// Element offset (within its batch) of tuple `t`, every index checked; kNoElement when any of
// its indices is the marker.
int64_t tupleOffset(const ir::Op& op, const NdIndexing& nd, const IndexReader& index, int64_t t) {
  int64_t offset = 0;
  bool marked = false;
  for (int64_t j = 0; j < nd.tuple; ++j) {
    const int64_t position = t * nd.tuple + j;
    const int64_t i = resolveMarkedIndex(op, "indices", index[position], position,
                                         nd.extents[static_cast<std::size_t>(j)]);
    if (i == kNoElement) {
      marked = true;
    } else {
      offset += i * nd.strides[static_cast<std::size_t>(j)];
    }
  }
  return marked ? kNoElement : offset;
}

// What the scatters share: a copy of src with updates combined in at the indexed places. src and
// dst may be one memory (retained state updated in place); every index is checked before any write.
struct Scatter {
  const Tensor& src;
  const Tensor& indices;
  const Tensor& updates;
  Tensor& dst;
  ScatterReduction reduction;
};

Scatter scatterTensors(const BuildContext& ctx) {
  Scatter s{ctx.input("src"), ctx.input("indices"), ctx.input("updates"), ctx.output("dst"), parseReduction(ctx.op)};
  requireIndexTensor(ctx, "indices");
  if (s.src.dtype != s.dst.dtype || s.updates.dtype != s.src.dtype) {
    throwKernelError(ctx.op, "src, updates and dst differ in dtype");
  }
  return s;
}

// Element-wise forms: calls f(k, offset) for every position k of `indices` with the offset in
// the source (or destination) it addresses, or kNoElement for the marker, after checking every
// index.
template <typename F>
void forEachElementIndex(const ir::Op& op, const ElementwiseIndexing& e, const Tensor& indices, F&& f) {
  const IndexReader index(indices);
  for (int64_t k = 0; k < indices.count(); ++k) resolveMarkedIndex(op, "indices", index[k], k, e.extent);
  forEachStrided(indices.dims, e.strides, [&](int64_t k, int64_t base) {
    const int64_t i = resolveMarkedIndex(op, "indices", index[k], k, e.extent);
    f(k, i == kNoElement ? kNoElement : base + i * e.axisStride);
  });
}

}  // namespace

NdIndexing ndIndexing(const BuildContext& ctx, const Tensor& src, const Tensor& indices, std::size_t batch) {
  if (indices.dims.empty() || src.dims.size() <= batch) throwKernelError(ctx.op, "input 'indices': wrong rank");
  NdIndexing nd;
  nd.tuple = indices.dims.back();
  if (nd.tuple < 1 || batch + static_cast<std::size_t>(nd.tuple) > src.dims.size()) {
    throwKernelError(ctx.op, "input 'indices': the tuple length exceeds the rank of 'src'");
  }
  const auto strides = rowMajorStrides(src.dims);
  for (std::size_t i = 0; i < batch; ++i) nd.batches *= src.dims[i];
  nd.batchElements = batch == 0 ? src.count() : strides[batch - 1];
  nd.tuplesPerBatch = indices.count() / nd.tuple / std::max<int64_t>(nd.batches, 1);
  for (std::size_t i = batch; i < batch + static_cast<std::size_t>(nd.tuple); ++i) {
    nd.extents.push_back(src.dims[i]);
    nd.strides.push_back(strides[i]);
  }
  nd.block = strides[batch + static_cast<std::size_t>(nd.tuple) - 1];
  return nd;
}

// N-D forms: the element offset of each of the first `tuples` index tuples (kNoElement for a
// marked one), every index checked.
std::vector<int64_t> tupleOffsets(const ir::Op& op, const NdIndexing& nd, const Tensor& indices, int64_t tuples) {
  const IndexReader index(indices);
  std::vector<int64_t> offsets(static_cast<std::size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    const int64_t offset = tupleOffset(op, nd, index, t);
    offsets[static_cast<std::size_t>(t)] = offset == kNoElement ? kNoElement
                                                                : (t / nd.tuplesPerBatch) * nd.batchElements + offset;
  }
  return offsets;
}

std::unique_ptr<Kernel> makeGatherElements(const BuildContext& ctx) {
  // Named references, not structured bindings: clang 14 cannot capture those in a lambda.
  const Gather g = gatherTensors(ctx);
  const Tensor& src = g.src;
  const Tensor& indices = g.indices;
  Tensor& dst = g.dst;
  const ElementwiseIndexing e = elementwiseIndexing(ctx, src, indices);
  const ir::Op& op = ctx.op;
  return makeKernel([&op, &src, &indices, &dst, e] {
    visitElementSize(ir::dtypeSize(src.dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = src.as<T>();
      T* out = dst.as<T>();
      forEachElementIndex(op, e, indices,
                          [&](int64_t k, int64_t offset) { out[k] = offset == kNoElement ? T{} : in[offset]; });
    });
  });
}

std::unique_ptr<Kernel> makeScatterElements(const BuildContext& ctx) {
  const Scatter s = scatterTensors(ctx);
  if (s.updates.dims != s.indices.dims) throwKernelError(ctx.op, "input 'updates': dims differ from 'indices'");
  const ElementwiseIndexing e = elementwiseIndexing(ctx, s.src, s.indices);
  const ir::Op& op = ctx.op;
  return makeKernel([&op, s, e] {
    std::vector<int64_t> offsets;
    offsets.reserve(static_cast<std::size_t>(s.indices.count()));
    forEachElementIndex(op, e, s.indices, [&](int64_t, int64_t offset) { offsets.push_back(offset); });
    if (s.src.data() != s.dst.data()) std::memcpy(s.dst.data(), s.src.data(), s.src.bytes());
    visitDType(s.src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* value = s.updates.as<T>();
      T* out = s.dst.as<T>();
      for (std::size_t k = 0; k < offsets.size(); ++k) {
        if (offsets[k] != kNoElement) combine(out[offsets[k]], value[k], s.reduction);
      }
    });
  });
}

std::unique_ptr<Kernel> makeGatherNd(const BuildContext& ctx) {
  // Named references, not structured bindings: clang 14 cannot capture those in a lambda.
  const Gather g = gatherTensors(ctx);
  const Tensor& src = g.src;
  const Tensor& indices = g.indices;
  Tensor& dst = g.dst;
  const NdIndexing nd = ndIndexing(ctx, src, indices, static_cast<std::size_t>(ctx.op.integer("batch_dims")));
  const std::size_t size = ir::dtypeSize(src.dtype);
  const ir::Op& op = ctx.op;
  const int threads = std::max(ctx.options.threads, 1);
  return makeKernel([&op, &src, &indices, &dst, nd, size, threads] {
    const auto offsets = tupleOffsets(op, nd, indices, nd.batches * nd.tuplesPerBatch);
    const std::size_t chunk = static_cast<std::size_t>(nd.block) * size;
    const auto tuples = static_cast<int64_t>(offsets.size());
    // Reading a whole KV cache (every decode step, every layer) is split over the op's threads.
    const int parts = offsets.size() * chunk >= kParallelGatherBytes ? threads : 1;
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
    for (int64_t t = 0; t < tuples; ++t) {
      std::byte* to = dst.data() + static_cast<std::size_t>(t) * chunk;
      const int64_t offset = offsets[static_cast<std::size_t>(t)];
      if (offset == kNoElement) {
        std::memset(to, 0, chunk);
      } else {
        std::memcpy(to, src.data() + static_cast<std::size_t>(offset) * size, chunk);
      }
    }
  });
}

std::unique_ptr<Kernel> makeScatterNd(const BuildContext& ctx) {
  const Scatter s = scatterTensors(ctx);
  const NdIndexing nd = ndIndexing(ctx, s.src, s.indices, 0);
  if (s.updates.count() != nd.tuplesPerBatch * nd.block)
    throwKernelError(ctx.op, "input 'updates': wrong element count");
  const ir::Op& op = ctx.op;
  return makeKernel([&op, s, nd] {
    const auto offsets = tupleOffsets(op, nd, s.indices, nd.tuplesPerBatch);
    if (s.src.data() != s.dst.data()) std::memcpy(s.dst.data(), s.src.data(), s.src.bytes());
    visitDType(s.src.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* value = s.updates.as<T>();
      T* out = s.dst.as<T>();
      for (std::size_t t = 0; t < offsets.size(); ++t) {
        if (offsets[t] == kNoElement) continue;
        for (int64_t i = 0; i < nd.block; ++i)
          combine(out[offsets[t] + i], value[static_cast<int64_t>(t) * nd.block + i], s.reduction);
      }
    });
  });
}

}  // namespace qaic::kernels::ops
