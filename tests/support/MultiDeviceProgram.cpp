// SPDX-License-Identifier: Apache-2.0
#include "MultiDeviceProgram.hpp"

#include "ReluProgram.hpp"
#include "container/QpcImage.hpp"
#include "container/QpcWriter.hpp"

namespace qaic::testing {

std::string partitionConfigFor(const std::vector<uint32_t>& slots, uint32_t numCores) {
  std::string ids, devices;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    ids += (i ? "," : "") + std::to_string(slots[i]);
    devices += std::string(i ? "," : "") + R"({"deviceId":)" + std::to_string(slots[i]) + R"(,"numCores":)" +
               std::to_string(numCores) + "}";
  }
  return R"({"connections":[{"devices":[)" + ids + R"(],"type":"p2p"}],"partitions":[{"name":"Partition0",)" +
         R"("devices":[)" + devices + "]}]}";
}

std::vector<std::byte> multiDeviceReluProgram(const std::vector<uint32_t>& slots, uint32_t numCores) {
  const std::vector<std::byte> relu = makeReluProgram(numCores).bytes;
  // Part 0 is the relu container itself: its contents, read back, with the parts added.
  const auto image = container::QpcImage::fromBytes(relu, "relu");
  container::QpcContents contents = image->contents();
  contents.partitionConfig = partitionConfigFor(slots, numCores);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    container::QpcDevicePart part;
    part.slot = slots[i];
    part.numCores = numCores;
    part.weightBytes = partWeightBytes(i);
    part.retainedBytes = partRetainedBytes(i);
    part.sentBytes = partSentBytes(i);
    part.receivedBytes = partReceivedBytes(i);
    if (i > 0) part.image = relu;
    contents.deviceParts.push_back(part);
  }
  return container::serializeQpc(contents);
}

}  // namespace qaic::testing
