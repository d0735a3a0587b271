// SPDX-License-Identifier: Apache-2.0
// The stress test's network, request encoding and result files, shared by the stress and soak
// tests and their client processes:
// a relu over kElements floats whose input is a function of the request id, so any output can
// be checked without keeping the request around.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
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
// A client's result file ("key value" lines, numbers; reading stops at the first other line).
std::map<std::string, long> readResults(const std::filesystem::path& file);

}  // namespace qaic::stress
