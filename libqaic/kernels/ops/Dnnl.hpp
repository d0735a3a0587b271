// SPDX-License-Identifier: Apache-2.0
// Small helpers shared by the oneDNN-backed kernels.
#pragma once

#include <algorithm>
#include <unordered_map>

#include <dnnl.hpp>

#include "kernels/ops/ConstantPacking.hpp"
#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels::ops {

inline dnnl::memory::desc plainDesc(const ir::Dims& dims, dnnl::memory::format_tag tag) {
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32, tag);
}

// A tensor of any rank (>= 1) in row-major order.
inline dnnl::memory::desc rowMajorDesc(const ir::Dims& dims,
                                       dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), type, strides);
}

// For every primitive a kernel keeps and runs: its scratchpad comes from the plan's
// SharedScratchpad (attach), so that the primitive may run on any thread.
inline dnnl::primitive_attr userScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

inline dnnl::memory wrap(const dnnl::memory::desc& md, dnnl::engine& engine, const Tensor& t) {
  return dnnl::memory(md, engine, const_cast<std::byte*>(t.data()));
}

// An activation reorder run at every inference (into or out of a primitive's layout).
class ScratchpadReorder {
 public:
  ScratchpadReorder(const BuildContext& ctx, const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
    const dnnl::reorder::primitive_desc pd(ctx.engine, from, ctx.engine, to, userScratchpad());
    primitive_ = dnnl::reorder(pd);
    scratchpad_ = ctx.scratchpad.attach(pd, ctx.engine);
  }
  void run(dnnl::stream& stream, const dnnl::memory& from, const dnnl::memory& to) {
    primitive_.execute(stream, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratchpad_}});
  }

 private:
  dnnl::reorder primitive_;
  dnnl::memory scratchpad_;
};

// Weights in the layout a primitive chose, reordered once when they are constant, else before
// every run (a weight computed by the graph itself). Either way the reorder is created and
// executed at once on the same thread, so it may keep oneDNN's default (library) scratchpad.
// With BuildOptions::packing, a constant is packed once for every program sharing its data
// (ConstantPacking), in its own bytes when nothing else reads it.
class PackedWeights {
 public:
  // `user`: the weight tensor input `arg` of the op, as `ctx` holds it, in its plain layout.
  PackedWeights(const BuildContext& ctx, std::string_view arg, dnnl::memory user, const dnnl::memory::desc& wanted)
      : user_(std::move(user)), stream_(&ctx.stream), constant_(ctx.input(arg).constant) {
    if (user_.get_desc() == wanted) {
      packed_ = user_;
      return;
    }
    if (constant_ && ctx.options.packing) {
      const std::string& name = ctx.op.findInput(arg)->name;
      if (auto shared = ctx.options.packing->pack(name, user_, wanted, ctx.input(arg).repackable, ctx.engine,
                                                  ctx.stream)) {
        packed_ = *shared;
        return;
      }
      packed_ = dnnl::memory(wanted, ctx.engine);
      if (ctx.options.packing->copyRewritten(name, packed_, ctx.stream)) return;
    } else {
      packed_ = dnnl::memory(wanted, ctx.engine);
    }
    reorder_ = true;
    if (constant_) refresh(true);
  }
  // Before a run.
  void refresh(bool force = false) {
    if (!reorder_ || (constant_ && !force)) return;
    dnnl::reorder(user_, packed_).execute(*stream_, user_, packed_);
    stream_->wait();
  }
  const dnnl::memory& memory() const { return packed_; }

 private:
  dnnl::memory user_;
  dnnl::memory packed_;
  dnnl::stream* stream_;
  bool constant_;
  bool reorder_ = false;
};

// A kernel that runs one oneDNN primitive over memory fixed when the plan is built: `args`
// (DNNL_ARG_SRC, DNNL_ARG_DST, ...) plus the plan's shared scratchpad.
class PrimitiveKernel final : public Kernel {
 public:
  PrimitiveKernel(const BuildContext& ctx, const dnnl::primitive_desc& pd, std::unordered_map<int, dnnl::memory> args)
      : stream_(ctx.stream), primitive_(pd), args_(std::move(args)) {
    args_[DNNL_ARG_SCRATCHPAD] = ctx.scratchpad.attach(pd, ctx.engine);
  }
  void run() override {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::stream& stream_;
  dnnl::primitive primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

// oneDNN's eltwise `algorithm` over a float tensor's elements (viewed as one row).
inline std::unique_ptr<Kernel> eltwiseKernel(const BuildContext& ctx, dnnl::algorithm algorithm, float alpha,
                                             float beta, const Tensor& src, const Tensor& dst) {
  const auto md = rowMajorDesc({std::max<int64_t>(src.count(), 1)});
  const dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, algorithm, md, alpha, beta), userScratchpad(),
      ctx.engine);
  return std::make_unique<PrimitiveKernel>(
      ctx, pd,
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, wrap(md, ctx.engine, src)},
                                            {DNNL_ARG_DST, wrap(md, ctx.engine, dst)}});
}

// oneDNN reports problems as dnnl::error; the executor reports them naming the op.
template <typename F>
auto withDnnl(const ir::Op& op, F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throwKernelError(op, std::string("oneDNN: ") + e.what());
  }
}

}  // namespace qaic::kernels::ops
