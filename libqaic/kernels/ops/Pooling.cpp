// SPDX-License-Identifier: Apache-2.0
// maxpool2d / avgpool2d and the N-D pool (1-D to 3-D, dilations) on oneDNN, for float and
// 8-bit integers. Padded cells never
// take part: max ignores them and the average divides by the number of real cells in the window
// (ONNX count_include_pad = 0; the importer pads explicitly for count_include_pad = 1).
#include "kernels/ops/Dnnl.hpp"
#include "kernels/ops/Factories.hpp"
#include "kernels/ops/Window.hpp"

namespace qaic::kernels::ops {
namespace {

using dnnl::memory;

std::unique_ptr<Kernel> poolKernel(const BuildContext& ctx, dnnl::algorithm algorithm, const NdWindow& g) {
  const Tensor& src = ctx.input("src");
  const Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::UInt8, ir::DType::Int8});
  if (src.dims.size() != g.kernel.size() + 2 || dst.dims.size() != src.dims.size()) {
    throwKernelError(ctx.op, "src and dst must be [N, C, spatial...] with one window value per spatial dim");
  }
  const auto type = src.dtype == ir::DType::Float   ? memory::data_type::f32
                    : src.dtype == ir::DType::UInt8 ? memory::data_type::u8
                                                    : memory::data_type::s8;
  return withDnnl(ctx.op, [&] {
    const auto srcMd = rowMajorDesc(src.dims, type);
    const auto dstMd = rowMajorDesc(dst.dims, type);
    const dnnl::pooling_v2_forward::primitive_desc pd(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_inference, algorithm, srcMd, dstMd, g.stride, g.kernel,
                                       g.dilation, g.padBegin, g.padEnd),
        userScratchpad(), ctx.engine);
    return std::make_unique<PrimitiveKernel>(
        ctx, pd,
        std::unordered_map<int, memory>{{DNNL_ARG_SRC, wrap(srcMd, ctx.engine, src)},
                                        {DNNL_ARG_DST, wrap(dstMd, ctx.engine, dst)}});
  });
}

dnnl::algorithm algorithmFor(bool max) {
  return max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
}

}  // namespace

std::unique_ptr<Kernel> makePool2d(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  if (src.dims.size() != 4) throwKernelError(ctx.op, "input 'src': expected [N, C, H, W]");
  // The 2-D pools have no dilation: forwardWindow leaves it 1, which is oneDNN's 0.
  return poolKernel(ctx, algorithmFor(ctx.op.optype == "maxpool2d"),
                    ndWindow(ir::forwardWindow(ctx.op, src.dims[2], src.dims[3])));
}

std::unique_ptr<Kernel> makePool(const BuildContext& ctx) {
  return poolKernel(ctx, algorithmFor(ctx.op.string("pool_op") == "max"), ndWindow(ctx.op));
}

}  // namespace qaic::kernels::ops
