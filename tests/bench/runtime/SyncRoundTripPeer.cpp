// SPDX-License-Identifier: Apache-2.0
// The C++ side of scripts/bench-python.py's comparison of qaic.Session.run with the runtime's
// synchronous round trip: the round trip of qaic_runtime_bench's TinySyncRoundTrip (getAvailable,
// setBuffers, submit, getCompletedId, putCompleted), run in blocks on command so that the script
// can alternate C++ and Python blocks under the same load (support/AlternatingBlocks.hpp says why).
//
// Usage: qaic_sync_round_trip_peer QPC_DIR   (device 0 under $QAIC_ROOT)
//   stdin:  one block size N per line;  stdout: the block's mean nanoseconds per round trip
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <qaic/qaic.hpp>

int main(int argc, char** argv) {
  using namespace qaic::rt;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s QPC_DIR\n", argv[0]);
    return 2;
  }
  try {
    auto qpc = Qpc::Factory(argv[1]);
    auto context = Context::Factory(nullptr, {0});
    auto set = InferenceSet::Factory(context, qpc, 0, 1, 1);
    std::vector<std::vector<uint8_t>> memory;
    std::vector<QBuffer> buffers;
    for (const auto& mapping : qpc->getBufferMappings()) memory.emplace_back(mapping.size);
    for (auto& bytes : memory) buffers.push_back(QBuffer{bytes.size(), bytes.data()});
    uint64_t id = 0;
    for (std::string line; std::getline(std::cin, line);) {
      const unsigned long count = std::stoul(line);
      const auto start = std::chrono::steady_clock::now();
      for (unsigned long i = 0; i < count; ++i) {
        shInferenceHandle handle, done;
        if (set->getAvailable(handle, 10'000'000) != QS_SUCCESS) throw Error(QS_TIMEDOUT, "getAvailable timed out");
        handle->setBuffers(buffers);
        set->submit(handle, ++id);
        const QStatus status = set->getCompletedId(done, id, 30'000'000);
        if (done) set->putCompleted(done);
        if (status != QS_SUCCESS) throw Error(status, "inference failed");
      }
      const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
      std::printf("%.1f\n", elapsed.count() / static_cast<double>(count ? count : 1));
      std::fflush(stdout);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "qaic_sync_round_trip_peer: %s: %s\n", statusName(e.status()), e.what());
    return 1;
  }
  return 0;
}
