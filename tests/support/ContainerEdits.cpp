// SPDX-License-Identifier: Apache-2.0
#include "ContainerEdits.hpp"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "container/QpcFormatError.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcLayout.hpp"
#include "container/QpcWriter.hpp"
#include "ir/Graph.hpp"

namespace qaic::testing {

void writeWithBufferRenamed(const std::filesystem::path& from, const std::filesystem::path& to,
                            const std::string& bufferName, const std::string& newName) {
  auto image = container::QpcImage::open(from.string());
  container::QpcContents contents = image->contents();
  for (auto& buffer : contents.buffers)
    if (buffer.io.bufferName == bufferName) buffer.io.bufferName = newName;
  std::vector<std::string> payloads;
  payloads.reserve(contents.programs.size());  // the payload spans point into these strings
  for (auto& program : contents.programs) {
    ir::Graph graph = ir::parseGraph(container::QpcImage::payloadText(program), "payload");
    for (auto& io : graph.io)
      if (io.bufferName == bufferName) io.bufferName = newName;
    payloads.push_back(ir::toJson(graph));
    program.payload = std::as_bytes(std::span(payloads.back().data(), payloads.back().size()));
  }
  try {
    container::writeQpcFile(to.string(), contents);
  } catch (const container::QpcFormatError& e) {
    throw ContainerRefused(e.what());
  }
}

void repairChecksum(std::string& containerBytes) {
  namespace layout = container::layout;
  const auto* body = reinterpret_cast<const Bytef*>(containerBytes.data() + layout::kHeaderSize);
  const auto crc = static_cast<uint32_t>(
      crc32_z(crc32_z(0, nullptr, 0), body, containerBytes.size() - layout::kHeaderSize));
  // Little endian, like the format.
  std::memcpy(containerBytes.data() + layout::kOffCrc, &crc, sizeof crc);
}

}  // namespace qaic::testing
