// gather, gather_elements, gather_nd, scatter_elements, scatter_nd. Indices are runtime data:
// every one is checked against its axis (negative ones count from the end, as in ONNX), and an
// out-of-range index fails the run with an error naming the op, the index and where it was.
#include <cstring>

#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"
#include "kernels/ops/Indexing.hpp"

namespace qaic::kernels::ops {
namespace {

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

}  // namespace

// `index` (read at position `position` of input `arg`) resolved against an axis of `extent`.
int64_t resolveIndex(const ir::Op& op, std::string_view arg, int64_t index, int64_t position, int64_t extent) {
  if (index < -extent || index >= extent) {
    throwKernelError(op, "input '" + std::string(arg) + "': index " + std::to_string(index) + " at position " +
                             std::to_string(position) + " is out of range [" + std::to_string(-extent) + ", " +
                             std::to_string(extent) + ")");
  }
  return index < 0 ? index + extent : index;
}

std::unique_ptr<Kernel> makeGather(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  const Tensor& indices = ctx.input("indices");
  Tensor& dst = ctx.output("dst");
  requireIndexTensor(ctx, "indices");
  if (src.dtype != dst.dtype) throwKernelError(ctx.op, "output dtype differs from input 'src'");
  const auto axis = static_cast<std::size_t>(ctx.op.integer("axis"));
  if (axis >= src.dims.size()) throwKernelError(ctx.op, "param 'axis': out of range");
  int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= src.dims[i];
  for (std::size_t i = axis + 1; i < src.dims.size(); ++i) inner *= src.dims[i];
  const int64_t extent = src.dims[axis];
  const std::size_t chunk = static_cast<std::size_t>(inner) * ir::dtypeSize(src.dtype);
  const ir::Op& op = ctx.op;
  return makeKernel([&op, &src, &indices, &dst, outer, extent, chunk] {
    const IndexReader index(indices);
    const int64_t count = indices.count();
    std::byte* out = dst.data();
    // Check every index first: a failing run writes nothing.
    for (int64_t k = 0; k < count; ++k) resolveIndex(op, "indices", index[k], k, extent);
    for (int64_t o = 0; o < outer; ++o) {
      const std::byte* block = src.data() + static_cast<std::size_t>(o * extent) * chunk;
      for (int64_t k = 0; k < count; ++k) {
        const int64_t i = index[k] < 0 ? index[k] + extent : index[k];
        std::memcpy(out, block + static_cast<std::size_t>(i) * chunk, chunk);
        out += chunk;
      }
    }
  });
}

}  // namespace qaic::kernels::ops
