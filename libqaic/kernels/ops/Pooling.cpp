// maxpool2d / avgpool2d on oneDNN. Padded cells never take part: max ignores them and the
// average divides by the number of real cells in the window (ONNX count_include_pad = 0).
#include "ir/Window2d.hpp"
#include "kernels/ops/Dnnl.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const BuildContext& ctx) : stream_(ctx.stream) {
    const Tensor& src = ctx.input("src");
    const Tensor& dst = ctx.output("dst");
    requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float});
    if (src.dims.size() != 4 || dst.dims.size() != 4) throwKernelError(ctx.op, "src and dst must be rank 4");
    const ir::Window2d win = ir::forwardWindow(ctx.op, src.dims[2], src.dims[3]);
    const auto algorithm = ctx.op.optype == "maxpool2d" ? dnnl::algorithm::pooling_max
                                                        : dnnl::algorithm::pooling_avg_exclude_padding;
    withDnnl(ctx.op, [&] {
      const auto srcMd = plainDesc(src.dims, dnnl::memory::format_tag::nchw);
      const auto dstMd = plainDesc(dst.dims, dnnl::memory::format_tag::nchw);
      dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, srcMd, dstMd,
                                       {win.strideH, win.strideW}, {win.kernelH, win.kernelW},
                                       {win.padTop, win.padLeft}, {win.padBottom, win.padRight});
      const dnnl::pooling_forward::primitive_desc pd(desc, userScratchpad(), ctx.engine);
      primitive_ = dnnl::pooling_forward(pd);
      scratchpad_ = ctx.scratchpad.attach(pd, ctx.engine);
      src_ = wrap(srcMd, ctx.engine, src);
      dst_ = wrap(dstMd, ctx.engine, dst);
      return 0;
    });
  }

  void run() override {
    primitive_.execute(stream_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}, {DNNL_ARG_SCRATCHPAD, scratchpad_}});
    stream_.wait();
  }

 private:
  dnnl::stream& stream_;
  dnnl::primitive primitive_;
  dnnl::memory src_, dst_, scratchpad_;
};

}  // namespace

std::unique_ptr<Kernel> makePool2d(const BuildContext& ctx) { return std::make_unique<PoolKernel>(ctx); }

}  // namespace qaic::kernels::ops
