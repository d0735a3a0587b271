// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes into the program container reader. The checksum is not
// verified so mutated inputs reach the structural checks; whatever loads is then walked in full
// so that a span the validation let through out of bounds shows up under ASan.
#include <cstddef>
#include <cstdint>
#include <span>

#include "container/QpcImage.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace qaic::container;
  try {
    const auto image = QpcImage::fromBytes(std::as_bytes(std::span(data, size)), "<fuzz>", false);
    volatile unsigned sum = 0;
    for (const auto& constant : image->constants()) {
      for (std::byte b : constant.tensor.data) sum = sum + static_cast<unsigned>(b);
    }
    for (const auto& program : image->programs()) {
      for (char c : QpcImage::payloadText(program)) sum = sum + static_cast<unsigned char>(c);
      for (auto index : program.bufferIndices) sum = sum + image->buffers().at(index).io.bufferName.size();
    }
    for (const auto& combination : image->allShapeCombinations()) sum = sum + combination.size();
    for (const auto& retained : image->retainedState()) sum = sum + retained.name.size() + retained.dims.size();
    for (const auto& specialization : image->contents().specializationPayloads) {
      for (std::byte b : specialization.payload) sum = sum + static_cast<unsigned>(b);
    }
    for (std::byte b : image->ioDescriptorBytes()) sum = sum + static_cast<unsigned>(b);
  } catch (const QpcFormatError&) {
  }
  return 0;
}
