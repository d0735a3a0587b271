// SPDX-License-Identifier: Apache-2.0
// What the collective kernels (all_reduce_sum, all_gather) of one part of a multi-device
// program call to exchange data with the other parts. The host executor knows nothing of
// where the parts run: the emulator's cards, threads of one test (PeerRendezvous) or anything
// else implement this. Every part calls the same collectives in the same order, each naming
// the op's `collective` id, so an implementation can tell a mismatch from a slow part. The
// stages of a pipelined program send and receive on numbered channels instead (PeerPipes.hpp).
#pragma once

#include <cstddef>
#include <span>

#include "ir/Graph.hpp"

namespace qaic::kernels {

class PeerExchange {
 public:
  virtual ~PeerExchange() = default;

  virtual std::size_t parts() const = 0;  // how many parts the program runs as (>= 1)
  virtual std::size_t part() const = 0;   // this part's index, 0 .. parts() - 1

  // Replaces `inOut` (elements of `type`: TL_FLOAT or TL_FLOAT16) on every part with the
  // elementwise sum over the parts, added in part order so every part gets the same bits.
  // Returns once this part's result is in place. Throws ExecutionError on a failed exchange
  // (a lost part, a timeout, a cancelled program), naming the part and the collective.
  virtual void allReduceSum(int collective, ir::DType type, std::span<std::byte> inOut) = 0;

  // Writes every part's `mine` (the same size on every part) into `all`, part p's at
  // p * mine.size(): `all` holds parts() * mine.size() bytes, part-major. Same errors.
  virtual void allGather(int collective, std::span<const std::byte> mine, std::span<std::byte> all) = 0;

  // Pipeline stages (peer_send / peer_receive): point-to-point messages on numbered channels.
  // send copies `bytes` out for part `to` and returns; it waits only while `to` holds as many
  // unread messages of `channel` as the link buffers (a bounded pipe). receive waits for the
  // next message part `from` sent on `channel` and copies it into `into`, whose size it must
  // match. Same errors as the collectives. An exchange without links (collectives only, as
  // kernels::PeerRendezvous's) throws ExecutionError naming the channel.
  virtual void send(int channel, std::size_t to, std::span<const std::byte> bytes);
  virtual void receive(int channel, std::size_t from, std::span<std::byte> into);
};

}  // namespace qaic::kernels
