// SPDX-License-Identifier: Apache-2.0
#include "StressNetwork.hpp"

#include <fstream>

#include <algorithm>

#include "NetworkIr.hpp"

namespace qaic::stress {

uint64_t requestId(uint64_t client, uint64_t thread, uint64_t sequence) {
  return (client & 0xff) << 56 | (thread & 0xff) << 48 | (sequence & 0xffff'ffff'ffffULL);
}

// Mixed signs whose pattern moves with the id, so a response delivered to the wrong request
// (or not written at all) shows.
std::vector<float> inputFor(uint64_t requestId) {
  std::vector<float> x(kElements);
  const uint64_t mix = requestId * 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < kElements; ++i) {
    const auto v = static_cast<int>((mix >> (i % 48)) % 201) - 100;
    x[static_cast<std::size_t>(i)] = static_cast<float>(v) * 0.25f + static_cast<float>(i) * 0.001f;
  }
  return x;
}

bool matchesRelu(const std::vector<float>& input, const std::vector<float>& output) {
  if (input.size() != output.size()) return false;
  for (std::size_t i = 0; i < input.size(); ++i)
    if (output[i] != std::max(input[i], 0.0f)) return false;
  return true;
}

std::string reluIr() { return testing::reluNetworkIr(kElements); }

std::map<std::string, long> readResults(const std::filesystem::path& file) {
  std::map<std::string, long> values;
  std::ifstream in(file);
  std::string key;
  long value = 0;
  while (in >> key >> value) values[key] = value;
  return values;
}

}  // namespace qaic::stress
