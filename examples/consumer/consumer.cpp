// SPDX-License-Identifier: Apache-2.0
// An out-of-tree program against an installed libqaic: loads a compiled program, runs one
// inference with every input byte set to `fill` on device 0, prints each output's first values.
//   consumer <program dir> [fill]        (devices under $QAIC_ROOT, as for every qaic tool)
// Builds as C++17 and C++20 (see CMakeLists.txt and Makefile beside this file).
#include <qaic/qaic.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
  using namespace qaic::rt;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <program dir> [fill byte]\n", argv[0]);
    return 2;
  }
  const int fill = argc > 2 ? std::atoi(argv[2]) : 0;
  try {
    std::shared_ptr<Qpc> qpc = Qpc::Factory(argv[1]);
    std::shared_ptr<Context> context = Context::Factory(nullptr, {0});
    std::shared_ptr<InferenceSet> set = InferenceSet::Factory(context, qpc, 0, /*setSize=*/1, /*numActivations=*/1);

    const BufferMappings& mappings = qpc->getBufferMappings();
    std::vector<std::vector<uint8_t>> storage(mappings.size());
    std::vector<QBuffer> buffers(mappings.size());
    for (std::size_t i = 0; i < mappings.size(); ++i) {
      storage[i].assign(mappings[i].size, mappings[i].ioType == BUFFER_IO_TYPE_INPUT ? uint8_t(fill) : uint8_t(0));
      buffers[i] = QBuffer{storage[i].size(), storage[i].data()};
    }
    shInferenceHandle handle;
    if (set->getAvailable(handle) != QS_SUCCESS) return 1;
    handle->setBuffers(buffers);
    set->submit(handle, /*requestId=*/1);
    const QStatus status = set->getCompletedId(handle, 1);
    set->putCompleted(handle);
    if (status != QS_SUCCESS) {
      std::fprintf(stderr, "consumer: inference failed: %s\n", statusName(status));
      return 1;
    }
    for (std::size_t i = 0; i < mappings.size(); ++i) {
      if (mappings[i].ioType != BUFFER_IO_TYPE_OUTPUT) continue;
      std::printf("%s:", mappings[i].bufferName.c_str());
      if (mappings[i].dataType == BUFFER_DATA_TYPE_FLOAT) {
        for (std::size_t k = 0; k < 4 && (k + 1) * sizeof(float) <= storage[i].size(); ++k) {
          float v = 0;
          std::memcpy(&v, storage[i].data() + k * sizeof(float), sizeof v);
          std::printf(" %g", static_cast<double>(v));
        }
      }
      std::printf(" (%zu bytes)\n", storage[i].size());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
