// The stress test's network and request encoding, shared by the test and its client processes:
// a relu over kElements floats whose input is a function of the request id, so any output can
// be checked without keeping the request around.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qaic::stress {

inline constexpr int kElements = 64;

// client (8 bits) | thread (8 bits) | sequence (48 bits): unique across the whole run.
uint64_t requestId(uint64_t client, uint64_t thread, uint64_t sequence);
std::vector<float> inputFor(uint64_t requestId);
// True when `output` is relu(`input`) element by element.
bool matchesRelu(const std::vector<float>& input, const std::vector<float>& output);
// LightNet IR JSON of y = relu(x), x and y [1, kElements] floats.
std::string reluIr();

}  // namespace qaic::stress
