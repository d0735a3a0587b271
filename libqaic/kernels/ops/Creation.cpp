// SPDX-License-Identifier: Apache-2.0
// create, zeros, arange: constants, filled once when the plan is built.
#include <cmath>
#include <cstring>

#include "kernels/DTypes.hpp"
#include "kernels/ops/ConstantPacking.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

// FNV-1a of the tensor name seeds the generator, so a random tensor is the same on every run,
// every machine and in every plan.
uint64_t seedFromName(std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char ch : name) {
    hash ^= ch;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// SplitMix64: tiny, fully specified, identical everywhere (std distributions are not).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t state_;
};

template <typename T>
void fillUniform(Tensor& t, double low, double high, std::string_view name) {
  SplitMix64 rng(seedFromName(name));
  T* out = t.as<T>();
  const int64_t n = t.count();
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if constexpr (kIsInteger<T>) {  // integers: every value of [low, high] equally likely
      v = std::floor(low + (std::floor(high) - low + 1.0) * rng.unit());
      v = std::min(v, high);
    } else {
      v = low + (high - low) * rng.unit();
    }
    out[i] = fromDouble<T>(v);
  }
}

void fillFromConstant(const BuildContext& ctx, Tensor& dst, const std::string& name) {
  const ir::WeightTensor* w = ctx.constants ? ctx.constants(name) : nullptr;
  if (!w) throwKernelError(ctx.op, "no constant data for tensor '" + name + "' (from_file)");
  if (dst.encoded) return;  // read in place by its matmul or gemm (MemoryPlan)
  if (dst.data() == w->data.data() && dst.bytes() == w->data.size()) return;  // a view of the data (MemoryPlan)
  if (ctx.options.packing && ctx.options.packing->isWidened(name, dst.data())) return;  // shared, widened once
  // Another program of the same data rewrote it into a primitive's layout: back to plain.
  if (ctx.options.packing && ctx.options.packing->restorePlain(name, dst.data(), ctx.engine, ctx.stream)) return;
  // qaic-exec -convert-to-fp16 stores float constants as float16; the network still computes
  // in float, so they widen here, once, when the program is built.
  if (w->dtype == ir::DType::Float16 && dst.dtype == ir::DType::Float && ir::elementCount(w->dims) == dst.count() &&
      w->data.size() == dst.bytes() / 2) {
    auto* out = reinterpret_cast<float*>(dst.data());
    for (int64_t i = 0; i < dst.count(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, w->data.data() + 2 * i, 2);
      out[i] = halfToFloat(bits);
    }
    return;
  }
  if (w->dtype != dst.dtype || ir::elementCount(w->dims) != dst.count()) {
    throwKernelError(ctx.op, "constant '" + name + "' is " + std::string(ir::dtypeName(w->dtype)) + " with " +
                                 std::to_string(ir::elementCount(w->dims)) + " elements, the op declares " +
                                 std::string(ir::dtypeName(dst.dtype)) + " with " + std::to_string(dst.count()));
  }
  if (w->data.size() != dst.bytes()) {
    throwKernelError(ctx.op, "constant '" + name + "' holds " + std::to_string(w->data.size()) + " bytes, expected " +
                                 std::to_string(dst.bytes()));
  }
  if (!w->data.empty()) std::memcpy(dst.data(), w->data.data(), w->data.size());
}

std::unique_ptr<Kernel> constantKernel(Tensor& t) {
  t.constant = true;
  return makeKernel([] {});
}

}  // namespace

std::unique_ptr<Kernel> makeCreate(const BuildContext& ctx) {
  const ir::Op& op = ctx.op;
  Tensor& dst = ctx.output("dst");
  const std::string& name = op.findOutput("dst")->name;
  const auto ran = op.numbers("ran");
  const auto data = op.numbers("data");
  if (op.boolean("from_file")) {
    fillFromConstant(ctx, dst, name);
  } else if (ran.size() == 2 && (ran[0] != 0.0 || ran[1] != 0.0)) {
    visitDType(dst.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      fillUniform<T>(dst, ran[0], ran[1], name);
    });
  } else {
    std::memset(dst.data(), 0, dst.bytes());
    const bool zeros = data.size() == 1 && data[0] == 0.0;
    if (!zeros) {
      if (static_cast<int64_t>(data.size()) > dst.count()) {
        throwKernelError(op, "param 'data': " + std::to_string(data.size()) + " values for " +
                                 std::to_string(dst.count()) + " elements");
      }
      visitDType(dst.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* out = dst.as<T>();
        for (std::size_t i = 0; i < data.size(); ++i) out[i] = fromDouble<T>(data[i]);
      });
    }
  }
  return constantKernel(dst);
}

std::unique_ptr<Kernel> makeZeros(const BuildContext& ctx) {
  Tensor& dst = ctx.output("dst");
  std::memset(dst.data(), 0, dst.bytes());
  return constantKernel(dst);
}

std::unique_ptr<Kernel> makeArange(const BuildContext& ctx) {
  Tensor& dst = ctx.output("dst");
  const double start = ctx.op.number("start");
  const double step = ctx.op.number("step");
  visitDType(dst.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = dst.as<T>();
    const int64_t n = dst.count();
    for (int64_t i = 0; i < n; ++i) out[i] = fromDouble<T>(start + step * static_cast<double>(i));
  });
  return constantKernel(dst);
}

}  // namespace qaic::kernels::ops
