// SPDX-License-Identifier: Apache-2.0
// A multi-device program container (device_parts, format version 4) written with the shared
// container writer, for the tests of every reader: the relu test program (ReluProgram) as part 0
// and as the nested single-device image of every other part, with figures a test can tell apart
// (qaic-exec writes real ones). qaic-util --qpc shows it, the emulator refuses it whole (the
// runtime loads each part on a card of its own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qaic::testing {

// The partition config efficient-transformers writes for `slots` (one p2p connection, one
// partition with `numCores` per device).
std::string partitionConfigFor(const std::vector<uint32_t>& slots, uint32_t numCores);

// The figures of part `part` in multiDeviceReluProgram: distinct per part, so a reader that
// shows the wrong part's figure is caught.
inline uint64_t partWeightBytes(std::size_t part) { return 1000000 + 1000 * part; }
inline uint64_t partRetainedBytes(std::size_t part) { return 2048 * (part + 1); }
inline uint64_t partSentBytes(std::size_t part) { return 4096 + part; }
inline uint64_t partReceivedBytes(std::size_t part) { return 8192 + part; }

// The relu program on `numCores` NSPs split over the devices `slots` (2..16 of them).
std::vector<std::byte> multiDeviceReluProgram(const std::vector<uint32_t>& slots = {0, 1}, uint32_t numCores = 2);

}  // namespace qaic::testing
