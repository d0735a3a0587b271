// SPDX-License-Identifier: Apache-2.0
// all_reduce_sum and all_gather: the traffic between the parts of a multi-device program,
// through the PeerExchange the program was built with. Each kernel owns, from build on, every
// byte it exchanges through, so a run allocates nothing.
#include <cstring>

#include "kernels/PeerExchange.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

// The program's exchange, checked against the op's part count.
PeerExchange& peersOf(const BuildContext& ctx) {
  PeerExchange* peers = ctx.options.peers.get();
  if (!peers) {
    throwKernelError(ctx.op,
                     "a collective needs the program's other parts, but the program was built without a "
                     "peer exchange (BuildOptions::peers)");
  }
  const int64_t parts = ctx.op.integer("parts");
  if (static_cast<int64_t>(peers->parts()) != parts) {
    throwKernelError(ctx.op, "param 'parts': the op expects " + std::to_string(parts) +
                                 " parts, the peer exchange has " + std::to_string(peers->parts()));
  }
  return *peers;
}

int collectiveId(const ir::Op& op) { return static_cast<int>(op.integer("collective")); }

}  // namespace

std::unique_ptr<Kernel> makeAllReduceSum(const BuildContext& ctx) {
  PeerExchange& peers = peersOf(ctx);
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Float16});
  if (src.dtype != dst.dtype || src.count() != dst.count()) throwKernelError(ctx.op, "output differs from input");
  const int collective = collectiveId(ctx.op);
  const std::size_t bytes = static_cast<std::size_t>(dst.count()) * ir::dtypeSize(dst.dtype);
  return makeKernel([&peers, &src, &dst, collective, bytes] {
    if (src.data() != dst.data() && bytes) std::memcpy(dst.data(), src.data(), bytes);
    if (peers.parts() > 1) peers.allReduceSum(collective, dst.dtype, std::span(dst.data(), bytes));
  });
}

// Gathering along a leading axis (nothing before it but ones) is the exchange's own part-major
// order, written straight into dst; any other axis goes through a part-major staging buffer
// that the kernel then interleaves: part p's rows land at p * rowBytes of each outer step.
std::unique_ptr<Kernel> makeAllGather(const BuildContext& ctx) {
  PeerExchange& peers = peersOf(ctx);
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  if (src.dtype != dst.dtype) throwKernelError(ctx.op, "output dtype differs from input");
  const AxisView view = checkedAxisView(ctx.op, src.dims);
  const std::size_t parts = peers.parts();
  const std::size_t mineBytes = static_cast<std::size_t>(src.count()) * ir::dtypeSize(src.dtype);
  if (static_cast<std::size_t>(dst.count()) * ir::dtypeSize(dst.dtype) != mineBytes * parts) {
    throwKernelError(ctx.op, "output does not hold every part's input");
  }
  const int collective = collectiveId(ctx.op);
  if (view.outer == 1 || parts == 1) {
    return makeKernel([&peers, &src, &dst, collective, mineBytes, parts] {
      std::span<const std::byte> mine(src.data(), mineBytes);
      if (parts == 1) {
        if (src.data() != dst.data() && mineBytes) std::memcpy(dst.data(), src.data(), mineBytes);
        return;
      }
      peers.allGather(collective, mine, std::span(dst.data(), mineBytes * parts));
    });
  }
  const std::size_t rowBytes = static_cast<std::size_t>(view.extent * view.inner) * ir::dtypeSize(src.dtype);
  const auto outer = static_cast<std::size_t>(view.outer);
  return makeKernel([&peers, &src, &dst, collective, mineBytes, parts, rowBytes, outer,
                     staging = std::vector<std::byte>(mineBytes * parts)]() mutable {
    peers.allGather(collective, std::span<const std::byte>(src.data(), mineBytes), staging);
    std::byte* out = dst.data();
    for (std::size_t o = 0; o < outer; ++o) {
      for (std::size_t p = 0; p < parts; ++p) {
        std::memcpy(out + (o * parts + p) * rowBytes, staging.data() + p * mineBytes + o * rowBytes, rowBytes);
      }
    }
  });
}

}  // namespace qaic::kernels::ops
