// SPDX-License-Identifier: Apache-2.0
// peer_send and peer_receive: the tensors that cross a pipeline stage boundary, through the
// point-to-point links of the PeerExchange the program was built with. Send hands src's bytes to
// the link (which copies them), receive fills dst in place; neither allocates when it runs.
#include <cstring>

#include "kernels/PeerExchange.hpp"
#include "kernels/ops/Factories.hpp"

namespace qaic::kernels::ops {
namespace {

struct Link {
  PeerExchange* peers = nullptr;
  int channel = 0;
  std::size_t peer = 0;
};

// The program's exchange, checked against the op's part count and peer.
Link linkOf(const BuildContext& ctx) {
  PeerExchange* peers = ctx.options.peers.get();
  if (!peers) {
    throwKernelError(ctx.op,
                     "a pipeline stage's transfer needs the program's other parts, but the program was built "
                     "without a peer exchange (BuildOptions::peers)");
  }
  const int64_t parts = ctx.op.integer("parts");
  if (static_cast<int64_t>(peers->parts()) != parts) {
    throwKernelError(ctx.op, "param 'parts': the op expects " + std::to_string(parts) +
                                 " parts, the peer exchange has " + std::to_string(peers->parts()));
  }
  const int64_t peer = ctx.op.integer("peer");
  if (peer >= parts || static_cast<std::size_t>(peer) == peers->part()) {
    throwKernelError(ctx.op, "param 'peer': " + std::to_string(peer) + " is not another part of " +
                                 std::to_string(parts) + " (this is part " + std::to_string(peers->part()) + ")");
  }
  return {peers, static_cast<int>(ctx.op.integer("channel")), static_cast<std::size_t>(peer)};
}

}  // namespace

std::unique_ptr<Kernel> makePeerSend(const BuildContext& ctx) {
  const Link link = linkOf(ctx);
  const Tensor& src = ctx.input("src");
  return makeKernel([link, &src] {
    const std::size_t bytes = static_cast<std::size_t>(src.count()) * ir::dtypeSize(src.dtype);
    link.peers->send(link.channel, link.peer, std::span<const std::byte>(src.data(), bytes));
  });
}

std::unique_ptr<Kernel> makePeerReceive(const BuildContext& ctx) {
  const Link link = linkOf(ctx);
  Tensor& dst = ctx.output("dst");
  return makeKernel([link, &dst] {
    const std::size_t bytes = static_cast<std::size_t>(dst.count()) * ir::dtypeSize(dst.dtype);
    link.peers->receive(link.channel, link.peer, std::span<std::byte>(dst.data(), bytes));
  });
}

}  // namespace qaic::kernels::ops
