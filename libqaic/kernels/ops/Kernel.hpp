// SPDX-License-Identifier: Apache-2.0
// The executor's internal model: tensors owned by a plan (one per input-shape combination) and
// one Kernel per op, created with everything it needs (oneDNN primitives, packed weights) so
// that running is only computing.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dnnl.hpp>

#include "ir/Graph.hpp"
#include "kernels/HostProgram.hpp"
#include "kernels/ops/Scratchpad.hpp"

namespace qaic::kernels {

struct Tensor {
  ir::DType dtype = ir::DType::Float;
  ir::Dims dims;
  bool constant = false;  // filled at build time (create, zeros, arange), or a view of such data
  // A view of constant data whose one reader packs it (a convolution's or matmul's weights):
  // with BuildOptions::packing it may be rewritten in place (ops/ConstantPacking.hpp).
  bool repackable = false;
  // An encoded constant (MXFP6 weights): no memory of its own; its one kind of reader, a matmul
  // or gemm weight, computes from these bytes in place (MemoryPlan checks the readers).
  const ir::WeightTensor* encoded = nullptr;

  Tensor() = default;
  Tensor(Tensor&&) = default;  // a moved vector keeps its buffer, so data() stays valid
  Tensor& operator=(Tensor&&) = default;
  Tensor(const Tensor&) = delete;  // a copy's data() would point into the original
  Tensor& operator=(const Tensor&) = delete;

  // Zero-filled memory of its own; operator new's alignment (16) suits every element type.
  void allocate(std::size_t bytes) {
    owned_.assign(bytes, std::byte{0});
    data_ = owned_.data();
    bytes_ = bytes;
  }
  // Memory the program's caller owns (a device buffer read or written in place, see
  // BuildOptions::inputMemory); it must outlive the plan.
  void useExternal(std::byte* memory, std::size_t bytes) {
    view(memory, bytes);
    bound_ = true;
  }
  // Memory of the plan's (its activation arena) or of the program's caller (constant data it
  // keeps alive), or of another tensor (a reshape's result), all outliving the kernels.
  void view(std::byte* memory, std::size_t bytes) {
    owned_.clear();
    owned_.shrink_to_fit();
    data_ = memory;
    bytes_ = bytes;
  }
  bool external() const { return bound_; }  // in the caller's io memory

  int64_t count() const { return ir::elementCount(dims); }
  std::size_t bytes() const { return bytes_; }
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data_);
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data_);
  }

 private:
  std::vector<std::byte> owned_;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  bool bound_ = false;
};

// Tensors by name; node-based so that kernels may keep pointers.
using TensorTable = std::map<std::string, Tensor, std::less<>>;

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run() = 0;
};

// What a kernel factory sees while a plan is built.
struct BuildContext {
  const ir::Op& op;
  TensorTable& tensors;
  const ConstantLookup& constants;
  const BuildOptions& options;
  dnnl::engine& engine;
  dnnl::stream& stream;
  SharedScratchpad& scratchpad;  // the plan's; see Scratchpad.hpp

  Tensor& input(std::string_view argName) const;
  Tensor& output(std::string_view argName) const;
};

// "op 'NAME' (OPTYPE): detail", the form the IR library uses for op errors.
[[noreturn]] void throwKernelError(const ir::Op& op, const std::string& detail);
// Throws unless `type` is among `allowed`, naming the op, the argument and the dtype.
void requireDTypes(const ir::Op& op, std::string_view argName, ir::DType type,
                   std::initializer_list<ir::DType> allowed);
// The enumerator of E whose position in `names` is the value of the op's string param `arg`
// (the IR's value lists, e.g. ir::kInterpolationModes, with E declared in the same order).
template <typename E, std::size_t N>
E enumParam(const ir::Op& op, std::string_view arg, const std::string_view (&names)[N]) {
  const std::string& value = op.string(arg);
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == value) return static_cast<E>(i);
  }
  throwKernelError(op, "param '" + std::string(arg) + "': unknown value '" + value + "'");
}

using KernelFactory = std::unique_ptr<Kernel> (*)(const BuildContext& ctx);
// nullptr for an optype the executor has no kernel for.
KernelFactory findKernelFactory(std::string_view optype);

// A kernel that is one closure (most ops need nothing but their tensors and params).
template <typename F>
class ClosureKernel final : public Kernel {
 public:
  explicit ClosureKernel(F f) : f_(std::move(f)) {}
  void run() override { f_(); }

 private:
  F f_;
};
template <typename F>
std::unique_ptr<Kernel> makeKernel(F f) {
  return std::make_unique<ClosureKernel<F>>(std::move(f));
}

}  // namespace qaic::kernels
