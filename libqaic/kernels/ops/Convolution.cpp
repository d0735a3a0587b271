// conv2d and deconv2d on oneDNN: primitives created and constant weights packed at build time;
// every primitive run per inference uses the plan's shared scratchpad (Scratchpad.hpp).
#include <cstring>
#include <optional>

#include "ir/Window2d.hpp"
#include "kernels/ops/Dnnl.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

void requireFloat(const BuildContext& ctx, std::initializer_list<std::string_view> args) {
  for (std::string_view arg : args) requireDTypes(ctx.op, arg, ctx.input(arg).dtype, {ir::DType::Float});
}

// The window of a convolution over k spatial dims, in oneDNN's terms (dilation 0 = none).
struct ConvGeometry {
  memory::dims stride, dilation, padBegin, padEnd;
};

// conv2d (k = 2) and the N-D conv (k = 1..3): src [N, C, d1..dk], weight [O, C/group, k1..kk].
class ConvKernel final : public Kernel {
 public:
  ConvKernel(const BuildContext& ctx, const ConvGeometry& g) : stream_(ctx.stream) {
    const Tensor& src = ctx.input("src");
    const Tensor& weight = ctx.input("weight");
    const Tensor& bias = ctx.input("bias");
    const Tensor& dst = ctx.output("dst");
    requireFloat(ctx, {"src", "weight", "bias"});
    const std::size_t rank = g.stride.size() + 2;
    if (src.dims.size() != rank || weight.dims.size() != rank || dst.dims.size() != rank) {
      throwKernelError(ctx.op, "src, weight and dst must be rank " + std::to_string(rank));
    }
    const int64_t group = ctx.op.integer("group");
    const int64_t oc = weight.dims[0];
    // Row-major [O, C/group, k...] is also row-major [group, O/group, C/group, k...].
    ir::Dims weightDims = weight.dims;
    if (group > 1) {
      weightDims[0] = oc / group;
      weightDims.insert(weightDims.begin(), group);
    }
    withDnnl(ctx.op, [&] {
      const auto srcMd = rowMajorDesc(src.dims);
      const auto dstMd = rowMajorDesc(dst.dims);
      const auto biasMd = rowMajorDesc({oc});
      const auto userWeightMd = rowMajorDesc(weightDims);
      // Every layout left to oneDNN: it picks its fastest (blocked) one; activations are
      // reordered around the primitive, constant weights once, here.
      const memory::desc anyWeights(userWeightMd.dims(), memory::data_type::f32, Tag::any);
      const memory::desc anySrc(srcMd.dims(), memory::data_type::f32, Tag::any);
      const memory::desc anyDst(dstMd.dims(), memory::data_type::f32, Tag::any);
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           anySrc, anyWeights, biasMd, anyDst, g.stride, g.dilation, g.padBegin,
                                           g.padEnd);
      dnnl::convolution_forward::primitive_desc pd(desc, userScratchpad(), ctx.engine);
      weights_.emplace(ctx, "weight", memory(userWeightMd, ctx.engine, const_cast<std::byte*>(weight.data())),
                       pd.weights_desc());
      primitive_ = dnnl::convolution_forward(pd);
      scratchpad_ = ctx.scratchpad.attach(pd, ctx.engine);
      userSrc_ = wrap(srcMd, ctx.engine, src);
      userDst_ = wrap(dstMd, ctx.engine, dst);
      src_ = userSrc_;
      dst_ = userDst_;
      if (pd.src_desc() != srcMd) {
        src_ = ctx.scratchpad.attach(pd.src_desc(), ctx.engine);
        srcReorder_.emplace(ctx, srcMd, pd.src_desc());
      }
      if (pd.dst_desc() != dstMd) {
        dst_ = ctx.scratchpad.attach(pd.dst_desc(), ctx.engine);
        dstReorder_.emplace(ctx, pd.dst_desc(), dstMd);
      }
      bias_ = wrap(biasMd, ctx.engine, bias);
      return 0;
    });
  }

  void run() override {
    weights_->refresh();
    if (srcReorder_) srcReorder_->run(stream_, userSrc_, src_);
    primitive_.execute(stream_, {{DNNL_ARG_SRC, src_},
                                 {DNNL_ARG_WEIGHTS, weights_->memory()},
                                 {DNNL_ARG_BIAS, bias_},
                                 {DNNL_ARG_DST, dst_},
                                 {DNNL_ARG_SCRATCHPAD, scratchpad_}});
    if (dstReorder_) dstReorder_->run(stream_, dst_, userDst_);
    stream_.wait();
  }

 private:
  dnnl::stream& stream_;
  dnnl::primitive primitive_;
  std::optional<PackedWeights> weights_;
  std::optional<ScratchpadReorder> srcReorder_, dstReorder_;
  memory userSrc_, userDst_, src_, bias_, dst_, scratchpad_;
};

// Transposed convolution: oneDNN computes the full, unpadded output; the kernel then crops the
// padding and adds the bias. That covers output_padding beyond pad_end (cells that no input
// reaches hold only the bias), which oneDNN's own padding cannot express.
class DeconvKernel final : public Kernel {
 public:
  DeconvKernel(const BuildContext& ctx) : stream_(ctx.stream), bias_(ctx.input("bias")), dst_(ctx.output("dst")) {
    const Tensor& src = ctx.input("src");
    const Tensor& weight = ctx.input("weight");
    requireFloat(ctx, {"src", "weight", "bias"});
    if (src.dims.size() != 4 || weight.dims.size() != 4 || dst_.dims.size() != 4) {
      throwKernelError(ctx.op, "src, weight and dst must be rank 4");
    }
    const int64_t group = ctx.op.integer("group");
    win_ = ir::deconvWindow(ctx.op, src.dims[2], src.dims[3]);
    const int64_t ic = weight.dims[0];
    const int64_t ocPerGroup = weight.dims[1];
    channels_ = ocPerGroup * group;
    if (bias_.count() != channels_)
      throwKernelError(ctx.op, "input 'bias': expected " + std::to_string(channels_) + " values");
    fullH_ = win_.strideH * (src.dims[2] - 1) + (win_.kernelH - 1) * win_.dilationH + 1;
    fullW_ = win_.strideW * (src.dims[3] - 1) + (win_.kernelW - 1) * win_.dilationW + 1;

    memory::dims weightDims{channels_, ic, weight.dims[2], weight.dims[3]};
    Tag weightTag = Tag::iohw;
    if (group > 1) {
      weightDims = {group, ocPerGroup, ic / group, weight.dims[2], weight.dims[3]};
      weightTag = Tag::giohw;
    }
    withDnnl(ctx.op, [&] {
      const auto srcMd = plainDesc(src.dims, Tag::nchw);
      const auto fullMd = plainDesc({src.dims[0], channels_, fullH_, fullW_}, Tag::nchw);
      const memory::desc anyWeights(weightDims, memory::data_type::f32, Tag::any);
      dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                             srcMd, anyWeights, fullMd, {win_.strideH, win_.strideW},
                                             {win_.dilationH - 1, win_.dilationW - 1}, {0, 0}, {0, 0});
      dnnl::deconvolution_forward::primitive_desc pd(desc, userScratchpad(), ctx.engine);
      weights_.emplace(
          ctx, "weight",
          memory({weightDims, memory::data_type::f32, weightTag}, ctx.engine, const_cast<std::byte*>(weight.data())),
          pd.weights_desc());
      primitive_ = dnnl::deconvolution_forward(pd);
      scratchpad_ = ctx.scratchpad.attach(pd, ctx.engine);
      src_ = wrap(srcMd, ctx.engine, src);
      fullMem_ = ctx.scratchpad.attach(fullMd, ctx.engine);
      return 0;
    });
  }

  void run() override {
    weights_->refresh();
    primitive_.execute(stream_, {{DNNL_ARG_SRC, src_},
                                 {DNNL_ARG_WEIGHTS, weights_->memory()},
                                 {DNNL_ARG_DST, fullMem_},
                                 {DNNL_ARG_SCRATCHPAD, scratchpad_}});
    stream_.wait();
    const float* bias = bias_.as<float>();
    const auto* full = static_cast<const float*>(fullMem_.get_data_handle());
    float* out = dst_.as<float>();
    const int64_t N = dst_.dims[0], OH = dst_.dims[2], OW = dst_.dims[3];
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < channels_; ++c) {
        const float* plane = full + (n * channels_ + c) * fullH_ * fullW_;
        float* o = out + (n * channels_ + c) * OH * OW;
        for (int64_t y = 0; y < OH; ++y) {
          const int64_t fy = y + win_.padTop;
          for (int64_t x = 0; x < OW; ++x) {
            const int64_t fx = x + win_.padLeft;
            const bool inside = fy >= 0 && fy < fullH_ && fx >= 0 && fx < fullW_;
            o[y * OW + x] = bias[c] + (inside ? plane[fy * fullW_ + fx] : 0.0f);
          }
        }
      }
    }
  }

 private:
  dnnl::stream& stream_;
  const Tensor& bias_;
  Tensor& dst_;
  ir::Window2d win_;
  int64_t channels_ = 0, fullH_ = 0, fullW_ = 0;
  dnnl::primitive primitive_;
  std::optional<PackedWeights> weights_;
  memory src_, fullMem_, scratchpad_;
};

}  // namespace

std::unique_ptr<Kernel> makeConv2d(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  if (src.dims.size() != 4) throwKernelError(ctx.op, "input 'src': expected [N, C, H, W]");
  const ir::Window2d win = ir::forwardWindow(ctx.op, src.dims[2], src.dims[3]);
  return std::make_unique<ConvKernel>(ctx, ConvGeometry{{win.strideH, win.strideW},
                                                        {win.dilationH - 1, win.dilationW - 1},
                                                        {win.padTop, win.padLeft},
                                                        {win.padBottom, win.padRight}});
}

std::unique_ptr<Kernel> makeConv(const BuildContext& ctx) {
  const auto stride = ctx.op.integers("stride");
  const auto pads = ctx.op.integers("pads");
  const auto spatial = static_cast<std::ptrdiff_t>(stride.size());
  ConvGeometry g{
      {stride.begin(), stride.end()}, {}, {pads.begin(), pads.begin() + spatial}, {pads.begin() + spatial, pads.end()}};
  for (int64_t d : ctx.op.integers("dilation")) g.dilation.push_back(d - 1);
  return std::make_unique<ConvKernel>(ctx, g);
}
std::unique_ptr<Kernel> makeDeconv2d(const BuildContext& ctx) { return std::make_unique<DeconvKernel>(ctx); }

}  // namespace qaic::kernels::ops
