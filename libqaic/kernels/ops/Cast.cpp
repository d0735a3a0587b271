// SPDX-License-Identifier: Apache-2.0
// cast: every element converted by the kernels' one conversion rule (DTypes.hpp): to an integer
// truncate toward zero and saturate (NaN -> 0), to float saturate, to bool nonzero -> 1.
#include "kernels/DTypes.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {

std::unique_ptr<Kernel> makeCast(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.count() != dst.count()) throwKernelError(ctx.op, "output element count differs from input");
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
