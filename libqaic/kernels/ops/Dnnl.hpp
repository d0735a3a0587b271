// Small helpers shared by the oneDNN-backed kernels.
#pragma once

#include <dnnl.hpp>

#include "kernels/ops/Kernel.hpp"

namespace qaic::kernels::ops {

inline dnnl::memory::desc plainDesc(const ir::Dims& dims, dnnl::memory::format_tag tag) {
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32, tag);
}

inline dnnl::memory wrap(const dnnl::memory::desc& md, dnnl::engine& engine, const Tensor& t) {
  return dnnl::memory(md, engine, const_cast<std::byte*>(t.data()));
}

// Weights in the layout a primitive chose, reordered once when they are constant, else before
// every run (a weight computed by the graph itself).
class PackedWeights {
 public:
  PackedWeights(dnnl::memory user, const dnnl::memory::desc& wanted, dnnl::engine& engine, dnnl::stream& stream,
                bool constant)
      : user_(std::move(user)), stream_(&stream), constant_(constant) {
    if (user_.get_desc() == wanted) {
      packed_ = user_;
      reorder_ = false;
      return;
    }
    packed_ = dnnl::memory(wanted, engine);
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
