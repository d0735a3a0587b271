// SPDX-License-Identifier: Apache-2.0
// cast: every element converted by the kernels' one conversion rule (DTypes.hpp): to an integer
// truncate toward zero and saturate (NaN -> 0), to float saturate, to bool nonzero -> 1.
#include "kernels/DTypes.hpp"
#include "kernels/format/DeviceFormat.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {

std::unique_ptr<Kernel> makeCast(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.count() != dst.count()) throwKernelError(ctx.op, "output element count differs from input");
  // float <-> float16 (a float16 KV cache a float graph reads and writes back, every step) goes
  // through the device-format conversion of a flat buffer: the same rounding, vectorized.
  const bool toHalf = src.dtype == ir::DType::Float && dst.dtype == ir::DType::Float16;
  const bool fromHalf = src.dtype == ir::DType::Float16 && dst.dtype == ir::DType::Float;
  if (toHalf || fromHalf) {
    return makeKernel([&src, &dst, toHalf] {
      const UserBufferView floats{"cast", ir::DType::Float, ir::UserLayout::NCHW, {src.count()}};
      const ir::DeviceFormat halves{ir::DeviceLayout::Flat, ir::DType::Float16};
      const std::span<const std::byte> in(static_cast<const std::byte*>(src.data()), src.bytes());
      const std::span<std::byte> out(static_cast<std::byte*>(dst.data()), dst.bytes());
      if (toHalf)
        userToDevice(floats, in, halves, out);
      else
        deviceToUser(halves, in, floats, out);
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
