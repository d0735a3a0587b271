// SPDX-License-Identifier: Apache-2.0
// conv2d and deconv2d on oneDNN: primitives created and constant weights packed at build time;
// every primitive run per inference uses the plan's shared scratchpad (Scratchpad.hpp).
#include <cstring>
#include <optional>

#include "kernels/ops/Dnnl.hpp"
#include "kernels/ops/Factories.hpp"
#include "kernels/ops/Window.hpp"

namespace qaic::kernels::ops {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

void requireFloat(const BuildContext& ctx, std::initializer_list<std::string_view> args) {
  for (std::string_view arg : args) requireDTypes(ctx.op, arg, ctx.input(arg).dtype, {ir::DType::Float});
}

// conv2d (k = 2) and the N-D conv (k = 1..3): src [N, C, d1..dk], weight [O, C/group, k1..kk].
class ConvKernel final : public Kernel {
 public:
  ConvKernel(const BuildContext& ctx, const NdWindow& g) : stream_(ctx.stream) {
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

// Transposed convolution (deconv2d, and the N-D deconv for k = 1..3): oneDNN computes the full,
// unpadded output; the kernel then crops the padding and adds the bias. That covers
// output_padding beyond pad_end (cells that no input reaches hold only the bias), which
// oneDNN's own padding cannot express.
class DeconvKernel final : public Kernel {
 public:
  DeconvKernel(const BuildContext& ctx, const NdWindow& g)
      : stream_(ctx.stream), bias_(ctx.input("bias")), dst_(ctx.output("dst")), padBegin_(g.padBegin) {
    const Tensor& src = ctx.input("src");
    const Tensor& weight = ctx.input("weight");
    requireFloat(ctx, {"src", "weight", "bias"});
    const std::size_t spatial = g.kernel.size();
    if (src.dims.size() != spatial + 2 || weight.dims.size() != spatial + 2 || dst_.dims.size() != spatial + 2) {
      throwKernelError(ctx.op, "src, weight and dst must be rank " + std::to_string(spatial + 2));
    }
    const int64_t group = ctx.op.integer("group");
    const int64_t ic = weight.dims[0];
    const int64_t ocPerGroup = weight.dims[1];
    channels_ = ocPerGroup * group;
    if (bias_.count() != channels_)
      throwKernelError(ctx.op, "input 'bias': expected " + std::to_string(channels_) + " values");
    full_ = {src.dims[0], channels_};
    for (std::size_t d = 0; d < spatial; ++d) {
      full_.push_back(g.stride[d] * (src.dims[d + 2] - 1) + (g.kernel[d] - 1) * (g.dilation[d] + 1) + 1);
    }
    // The weight is [IC, OC/group, k...] row-major; oneDNN names its dims [OC, IC, k...], or
    // [group, OC/group, IC/group, k...]: the same bytes described by strides.
    const int64_t kernelVolume = ir::elementCount(ir::Dims(weight.dims.begin() + 2, weight.dims.end()));
    memory::dims weightDims, weightStrides;
    if (group == 1) {
      weightDims = {channels_, ic};
      weightStrides = {kernelVolume, ocPerGroup * kernelVolume};
    } else {
      weightDims = {group, ocPerGroup, ic / group};
      weightStrides = {(ic / group) * ocPerGroup * kernelVolume, kernelVolume, ocPerGroup * kernelVolume};
    }
    int64_t stride = kernelVolume;
    for (std::size_t d = 0; d < spatial; ++d) {
      weightDims.push_back(weight.dims[d + 2]);
      stride /= weight.dims[d + 2];
      weightStrides.push_back(stride);
    }
    withDnnl(ctx.op, [&] {
      const auto srcMd = rowMajorDesc(src.dims);
      const auto fullMd = rowMajorDesc(full_);
      const memory::desc userWeights(weightDims, memory::data_type::f32, weightStrides);
      const memory::desc anyWeights(weightDims, memory::data_type::f32, Tag::any);
      const memory::dims zeros(spatial, 0);
      dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                             srcMd, anyWeights, fullMd, g.stride, g.dilation, zeros, zeros);
      dnnl::deconvolution_forward::primitive_desc pd(desc, userScratchpad(), ctx.engine);
      weights_.emplace(ctx, "weight", memory(userWeights, ctx.engine, const_cast<std::byte*>(weight.data())),
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
    cropAndAddBias(static_cast<const float*>(fullMem_.get_data_handle()));
  }

 private:
  // out[n, c, p] = bias[c] + full[n, c, p + padBegin] where that cell exists, row by row of the
  // last dim.
  void cropAndAddBias(const float* full) {
    const float* bias = bias_.as<float>();
    float* out = dst_.as<float>();
    const std::size_t rank = dst_.dims.size();
    const int64_t width = dst_.dims[rank - 1], fullWidth = full_[rank - 1], shift = padBegin_.back();
    int64_t rows = 1;
    for (std::size_t d = 0; d + 1 < rank; ++d) rows *= dst_.dims[d];
    std::vector<int64_t> at(rank - 1, 0);  // n, c, then the leading spatial coordinates
    for (int64_t row = 0; row < rows; ++row) {
      const float b = bias[at[1]];
      int64_t fullRow = at[0] * full_[1] + at[1];
      bool inside = true;
      for (std::size_t d = 2; d + 1 < rank; ++d) {
        const int64_t pos = at[d] + padBegin_[d - 2];
        inside = inside && pos >= 0 && pos < full_[d];
        fullRow = fullRow * full_[d] + pos;
      }
      float* o = out + row * width;
      const float* f = inside ? full + fullRow * fullWidth : nullptr;
      for (int64_t x = 0; x < width; ++x) {
        const int64_t fx = x + shift;
        o[x] = b + (f != nullptr && fx >= 0 && fx < fullWidth ? f[fx] : 0.0f);
      }
      for (std::size_t d = rank - 1; d-- > 0;) {
        if (++at[d] < dst_.dims[d]) break;
        at[d] = 0;
      }
    }
  }

  dnnl::stream& stream_;
  const Tensor& bias_;
  Tensor& dst_;
  memory::dims padBegin_;
  int64_t channels_ = 0;
  ir::Dims full_;
  dnnl::primitive primitive_;
  std::optional<PackedWeights> weights_;
  memory src_, fullMem_, scratchpad_;
};

}  // namespace

std::unique_ptr<Kernel> makeConv2d(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  if (src.dims.size() != 4) throwKernelError(ctx.op, "input 'src': expected [N, C, H, W]");
  return std::make_unique<ConvKernel>(ctx, ndWindow(ir::forwardWindow(ctx.op, src.dims[2], src.dims[3])));
}

std::unique_ptr<Kernel> makeConv(const BuildContext& ctx) {
  return std::make_unique<ConvKernel>(ctx, ndWindow(ctx.op));
}

std::unique_ptr<Kernel> makeDeconv2d(const BuildContext& ctx) {
  const Tensor& src = ctx.input("src");
  if (src.dims.size() != 4) throwKernelError(ctx.op, "input 'src': expected [N, C, H, W]");
  return std::make_unique<DeconvKernel>(ctx, ndWindow(ir::deconvWindow(ctx.op, src.dims[2], src.dims[3])));
}

std::unique_ptr<Kernel> makeDeconv(const BuildContext& ctx) {
  return std::make_unique<DeconvKernel>(ctx, ndWindow(ctx.op));
}

}  // namespace qaic::kernels::ops
