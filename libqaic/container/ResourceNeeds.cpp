// SPDX-License-Identifier: Apache-2.0
#include "container/ResourceNeeds.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace qaic::container {
namespace {

uint64_t times(uint64_t perActivation, uint32_t numActivations, uint64_t limit, const char* field) {
  if (perActivation != 0 && numActivations > limit / perActivation)
    throw std::overflow_error(std::string(field) + ": " + std::to_string(numActivations) + " activations of " +
                              std::to_string(perActivation) + " overflow the field");
  return perActivation * numActivations;
}

}  // namespace

uint64_t constantsBytes(const QpcContents& contents) {
  uint64_t total = 0;
  for (const auto& c : contents.constants) total += c.tensor.data.size();
  return total;
}

rt::Resources resourceNeeds(const QpcContents& contents, const QpcProgram& program, uint32_t numActivations) {
  constexpr uint64_t u32 = std::numeric_limits<uint32_t>::max();
  constexpr uint64_t u64 = std::numeric_limits<uint64_t>::max();
  const uint64_t constants = constantsBytes(contents);
  if (program.ioRegionSize > u64 - constants) throw std::overflow_error("ddrSize: IO region plus constants overflow");
  rt::Resources n;
  n.numNsp = static_cast<uint32_t>(times(program.numCores, numActivations, u32, "numNsp"));
  n.numMcid = static_cast<uint32_t>(times(program.numMulticastIds, numActivations, u32, "numMcid"));
  n.numSem = static_cast<uint32_t>(times(program.numSemaphores, numActivations, u32, "numSem"));
  n.numVc = numActivations;
  n.ddrSize = times(program.ioRegionSize + constants, numActivations, u64, "ddrSize");
  return n;
}

}  // namespace qaic::container
