// SPDX-License-Identifier: Apache-2.0
// cast: every element converted by the kernels' one conversion rule (DTypes.hpp): to an integer
// truncate toward zero and saturate (NaN -> 0), to float saturate, to bool nonzero -> 1.
#include <algorithm>

#include "kernels/DTypes.hpp"
#include "kernels/format/DeviceFormat.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {

namespace {
constexpr int64_t kParallelCastElements = int64_t{1} << 20;
}  // namespace

std::unique_ptr<Kernel> makeCast(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.count() != dst.count()) throwKernelError(ctx.op, "output element count differs from input");
  // float <-> float16 (a float16 KV cache a float graph reads and writes back, every step) goes
  // through the device-format conversion of a flat buffer: the same rounding, vectorized.
  const bool toHalf = src.dtype == ir::DType::Float && dst.dtype == ir::DType::Float16;
  const bool fromHalf = src.dtype == ir::DType::Float16 && dst.dtype == ir::DType::Float;
  if (toHalf || fromHalf) {
    // A whole cache is memory-bound work: large ones split over the op's threads.
    const int threads = std::max(ctx.options.threads, 1);
    return makeKernel([&src, &dst, toHalf, threads] {
      const int64_t count = src.count();
      const int parts = count >= kParallelCastElements ? threads : 1;
      const std::size_t inSize = ir::dtypeSize(src.dtype), outSize = ir::dtypeSize(dst.dtype);
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
      for (int part = 0; part < parts; ++part) {
        const int64_t begin = count * part / parts, end = count * (part + 1) / parts;
        const UserBufferView floats{"cast", ir::DType::Float, ir::UserLayout::NCHW, {end - begin}};
        const ir::DeviceFormat halves{ir::DeviceLayout::Flat, ir::DType::Float16};
        const std::span<const std::byte> in(static_cast<const std::byte*>(src.data()) + begin * inSize,
                                            static_cast<std::size_t>(end - begin) * inSize);
        const std::span<std::byte> out(static_cast<std::byte*>(dst.data()) + begin * outSize,
                                       static_cast<std::size_t>(end - begin) * outSize);
        if (toHalf)
          userToDevice(floats, in, halves, out);
        else
          deviceToUser(halves, in, floats, out);
      }
    });
  }
  return makeKernel([&src, &dst] {
    visitDTypePair(src.dtype, dst.dtype, [&](auto inTag, auto outTag) {
      using In = typename decltype(inTag)::type;
      using Out = typename decltype(outTag)::type;
      const In* in = src.as<In>();
      Out* out = dst.as<Out>();
      const int64_t n = src.count();
      for (int64_t i = 0; i < n; ++i) out[i] = convertValue<Out>(in[i]);
    });
  });
}

}  // namespace qaic::kernels::ops
