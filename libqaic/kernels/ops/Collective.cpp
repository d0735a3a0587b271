// SPDX-License-Identifier: Apache-2.0
// all_reduce_sum and all_gather: the traffic between the parts of a multi-device program,
// through the PeerExchange the program was built with. Each kernel owns, from build on, every
// byte it exchanges through, so a run allocates nothing.
//
// With param wire = "mxint8" (qaic-exec -allow-mxint8-mdp-io) a float or float16 collective sends
// its data as MXINT8 (mx/Mxint8Format.hpp): each part encodes its contribution, the parts
// exchange the encodings (an all_gather of encoded bytes, so the exchange counts encoded bytes),
// and every part decodes all of them, its own included. all_reduce_sum then adds the decoded
// contributions in part order and all_gather places them: every part computes from the same
// bytes in the same order, so every part gets the same bits.
#include <cstring>

#include "kernels/PeerExchange.hpp"
#include "kernels/format/Half.hpp"
#include "kernels/mx/Mxint8Format.hpp"
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

// Whether the op's data travels as MXINT8 (param wire, absent in graphs older than it): only
// float and float16 can.
bool mxint8Wire(const ir::Op& op, ir::DType dtype) {
  const ir::Param* wire = op.findParam("wire");
  if (!wire || op.string("wire") != "mxint8") return false;
  if (dtype != ir::DType::Float && dtype != ir::DType::Float16) {
    throwKernelError(op,
                     "param 'wire': mxint8 carries TL_FLOAT or TL_FLOAT16, not " + std::string(ir::dtypeName(dtype)));
  }
  return true;
}

// One part's contribution on the wire and every part's as received, sized at build.
struct Mxint8Staging {
  std::size_t elements = 0, encodedBytes = 0;
  std::vector<std::byte> mine, all;

  Mxint8Staging(std::size_t elementCount, std::size_t parts)
      : elements(elementCount),
        encodedBytes(mx::mxint8EncodedBytes(elementCount)),
        mine(encodedBytes),
        all(encodedBytes * parts) {}

  // Encodes `data` (elements of `dtype`) and exchanges it: afterwards all holds part p's
  // encoding at p * encodedBytes.
  void exchange(PeerExchange& peers, int collective, ir::DType dtype, const std::byte* data) {
    if (dtype == ir::DType::Float)
      mx::encodeMxint8(reinterpret_cast<const float*>(data), elements, mine.data());
    else
      mx::encodeMxint8(reinterpret_cast<const uint16_t*>(data), elements, mine.data());
    peers.allGather(collective, mine, all);
  }
  const std::byte* part(std::size_t p) const { return all.data() + p * encodedBytes; }
};

// Elements [begin, end) of part p's decoded contribution written to `out` as `dtype`.
void decodeInto(const Mxint8Staging& staging, std::size_t p, std::size_t begin, std::size_t end, ir::DType dtype,
                std::byte* out) {
  if (dtype == ir::DType::Float) {
    mx::decodeMxint8(staging.part(p), staging.elements, begin, end, reinterpret_cast<float*>(out));
    return;
  }
  constexpr std::size_t kBlock = 256;
  float values[kBlock];
  auto* halves = reinterpret_cast<uint16_t*>(out);
  for (std::size_t start = begin; start < end; start += kBlock) {
    const std::size_t n = std::min(kBlock, end - start);
    mx::decodeMxint8(staging.part(p), staging.elements, start, start + n, values);
    for (std::size_t i = 0; i < n; ++i) halves[start - begin + i] = floatToHalf(values[i]);
  }
}

// dst = the decoded contributions added in part order (float16: accumulated in float, rounded
// once, as the exchange's own sum does).
void sumDecoded(const Mxint8Staging& staging, std::size_t parts, ir::DType dtype, std::byte* dst) {
  const std::size_t count = staging.elements;
  if (dtype == ir::DType::Float) {
    auto* sum = reinterpret_cast<float*>(dst);
    mx::decodeMxint8(staging.part(0), count, 0, count, sum);
    for (std::size_t p = 1; p < parts; ++p) mx::accumulateMxint8(staging.part(p), count, 0, count, sum);
    return;
  }
  constexpr std::size_t kBlock = 256;
  float acc[kBlock];
  auto* halves = reinterpret_cast<uint16_t*>(dst);
  for (std::size_t start = 0; start < count; start += kBlock) {
    const std::size_t n = std::min(kBlock, count - start);
    mx::decodeMxint8(staging.part(0), count, start, start + n, acc);
    for (std::size_t p = 1; p < parts; ++p) mx::accumulateMxint8(staging.part(p), count, start, start + n, acc);
    for (std::size_t i = 0; i < n; ++i) halves[start + i] = floatToHalf(acc[i]);
  }
}

}  // namespace

std::unique_ptr<Kernel> makeAllReduceSum(const BuildContext& ctx) {
  PeerExchange& peers = peersOf(ctx);
  const Tensor& src = ctx.input("src");
  Tensor& dst = ctx.output("dst");
  requireDTypes(ctx.op, "src", src.dtype, {ir::DType::Float, ir::DType::Float16});
  if (src.dtype != dst.dtype || src.count() != dst.count()) throwKernelError(ctx.op, "output differs from input");
  const int collective = collectiveId(ctx.op);
  const std::size_t bytes = static_cast<std::size_t>(dst.count()) * ir::dtypeSize(dst.dtype);
  const std::size_t parts = peers.parts();
  if (mxint8Wire(ctx.op, dst.dtype) && parts > 1) {
    return makeKernel([&peers, &src, &dst, collective, parts,
                       staging = Mxint8Staging(static_cast<std::size_t>(dst.count()), parts)]() mutable {
      // src is read whole before dst is written, so the two may share memory.
      staging.exchange(peers, collective, dst.dtype, src.data());
      sumDecoded(staging, parts, dst.dtype, dst.data());
    });
  }
  return makeKernel([&peers, &src, &dst, collective, bytes] {
    if (src.data() != dst.data() && bytes) std::memcpy(dst.data(), src.data(), bytes);
    if (peers.parts() > 1) peers.allReduceSum(collective, dst.dtype, std::span(dst.data(), bytes));
  });
}

// Gathering along a leading axis (nothing before it but ones) is the exchange's own part-major
// order, written straight into dst; any other axis goes through a part-major staging buffer
// that the kernel then interleaves: part p's rows land at p * rowBytes of each outer step.
// MXINT8 decodes each part's rows straight to where they land.
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
  const std::size_t rowBytes = static_cast<std::size_t>(view.extent * view.inner) * ir::dtypeSize(src.dtype);
  const auto outer = static_cast<std::size_t>(view.outer);
  if (mxint8Wire(ctx.op, src.dtype) && parts > 1) {
    const auto rowElements = static_cast<std::size_t>(view.extent * view.inner);
    return makeKernel([&peers, &src, &dst, collective, parts, rowBytes, rowElements, outer,
                       staging = Mxint8Staging(static_cast<std::size_t>(src.count()), parts)]() mutable {
      staging.exchange(peers, collective, src.dtype, src.data());
      for (std::size_t o = 0; o < outer; ++o) {
        for (std::size_t p = 0; p < parts; ++p) {
          decodeInto(staging, p, o * rowElements, (o + 1) * rowElements, src.dtype,
                     dst.data() + (o * parts + p) * rowBytes);
        }
      }
    });
  }
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
