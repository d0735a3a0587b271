// SPDX-License-Identifier: Apache-2.0
#include "kernels/PeerExchange.hpp"

#include <string>

#include "kernels/HostProgram.hpp"

namespace qaic::kernels {

namespace {

[[noreturn]] void noLinks(std::size_t part, int channel, const char* op) {
  throw ExecutionError("part " + std::to_string(part) + ", channel " + std::to_string(channel) + ": " + op +
                       " needs point-to-point links between the parts, and this program's peer exchange has "
                       "collectives only");
}

}  // namespace

void PeerExchange::send(int channel, std::size_t, std::span<const std::byte>) { noLinks(part(), channel, "peer_send"); }

void PeerExchange::receive(int channel, std::size_t, std::span<std::byte>) { noLinks(part(), channel, "peer_receive"); }

}  // namespace qaic::kernels
