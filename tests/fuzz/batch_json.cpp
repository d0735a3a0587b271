// SPDX-License-Identifier: Apache-2.0
// The --aic-batch-json-input reader against a network with every buffer type: regular,
// partial, specialized and droppable. Input files are not needed: with -c off, output files are
// never opened, and inputs are named after files that this target creates once.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "BatchJson.hpp"
#include "RunnerNetworkBuffers.hpp"

namespace {

using namespace qaic::runner;

using qaic::runner::testing::networkBuffer;

const std::vector<NetworkBuffer>& network() {
  static const std::vector<NetworkBuffer> buffers = {
      networkBuffer("in0", true, {1, 32}, true, true, {{1, 32}, {1, 1}}),
      networkBuffer("in1", true, {1, 128}, false, false, {{1, 128}, {1, 2}}),
      networkBuffer("out0", false, {1, 64}, true, true, {{1, 64}, {1, 3}}),
      networkBuffer("out1", false, {1, 32}, false, false, {{1, 32}, {1, 4}}),
  };
  return buffers;
}

std::string makeInputs() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/qaic-fuzz-batch-XXXXXX";
    std::string path = mkdtemp(tmpl) ? tmpl : "/tmp";
    const std::pair<const char*, std::size_t> files[] = {{"a.raw", 128}, {"b.raw", 512}, {"c.raw", 4}, {"d.raw", 8}};
    for (const auto& [name, bytes] : files) {
      if (FILE* f = std::fopen((path + "/" + name).c_str(), "wb")) {
        std::vector<char> zeros(bytes);
        std::fwrite(zeros.data(), 1, zeros.size(), f);
        std::fclose(f);
      }
    }
    return path;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string dir = makeInputs();
  try {
    BatchSpec spec = parseBatchJson(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json", dir, network(),
                                    BatchJsonOptions{false});
    // What the reader accepted must be internally consistent.
    for (const IoSet& set : spec.sets) {
      if (set.buffers.size() != network().size()) __builtin_trap();
      for (const auto& entry : set.buffers)
        if (entry && entry->elementSize != 4) __builtin_trap();
    }
  } catch (const BatchJsonError&) {
  }
  return 0;
}
