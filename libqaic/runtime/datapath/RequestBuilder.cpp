// SPDX-License-Identifier: Apache-2.0
#include "runtime/datapath/RequestBuilder.hpp"

#include <algorithm>
#include <cstring>

namespace qaic::rt {
namespace {

template <typename T>
void put(std::span<std::byte> out, std::size_t offset, const T& value) {
  std::memcpy(out.data() + offset, &value, sizeof value);
}
template <typename T>
T get(std::span<const std::byte> in, std::size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof value);
  return value;
}

driver::RequestElement transfer(uint8_t cmd, uint64_t src, uint64_t dst, uint64_t length) {
  driver::RequestElement e{};
  e.cmd = cmd;
  e.srcAddr = src;
  e.dstAddr = dst;
  e.length = static_cast<uint32_t>(length);
  return e;
}

}  // namespace

void writeRequestDescriptor(std::span<std::byte> out, const ProgramLayout& layout, const RequestPlan& plan) {
  std::memset(out.data(), 0, driver::kDescriptorBytes);
  driver::RequestDescriptorHeader header{driver::kRequestDescriptorMagic, driver::kDescriptorVersion,
                                         static_cast<uint32_t>(layout.buffers.size()), plan.sequence};
  put(out, 0, header);
  for (std::size_t i = 0; i < layout.buffers.size(); ++i) {
    driver::RequestDescriptorEntry entry{};
    entry.present = plan.present[i] ? 1 : 0;
    if (plan.present[i]) {
      entry.rank = static_cast<uint32_t>(plan.dims[i].size());
      for (std::size_t d = 0; d < plan.dims[i].size() && d < driver::kDescriptorMaxRank; ++d)
        entry.dims[d] = static_cast<uint32_t>(plan.dims[i][d]);
    }
    put(out, sizeof header + i * sizeof entry, entry);
  }
  put(out, driver::kRequestFlagsOffset, plan.resetState ? driver::kRequestFlagResetState : uint32_t{0});
}

std::vector<driver::RequestElement> buildRequest(const ProgramLayout& layout, const RequestPlan& plan) {
  std::vector<driver::RequestElement> elements;
  elements.reserve(layout.elementsPerRequest);
  elements.push_back(transfer(driver::kReqCmdToDevice,
                              driver::makeIova(plan.inputBo, static_cast<uint32_t>(layout.requestDescriptorStaging)),
                              layout.requestDescriptorOffset, driver::kDescriptorBytes));
  for (std::size_t i = 0; i < layout.buffers.size(); ++i) {
    const StagedBuffer& b = layout.buffers[i];
    if (!b.isInput || !plan.present[i]) continue;
    const bool direct = i < plan.direct.size() && plan.direct[i] != 0;
    elements.push_back(
        transfer(driver::kReqCmdToDevice,
                 direct ? plan.direct[i] : driver::makeIova(plan.inputBo, static_cast<uint32_t>(b.stagingOffset)),
                 b.deviceOffset, deviceBytes(b, plan.dims[i])));
  }
  // The last to-device element starts the program once its data is in place.
  driver::RequestElement& last = elements.back();
  last.dbAddr = layout.doorbellAddress;
  last.dbLen = 32;
  last.dbData = plan.sequence;

  const std::size_t firstDownload = elements.size();
  for (std::size_t i = 0; i < layout.buffers.size(); ++i) {
    const StagedBuffer& b = layout.buffers[i];
    if (b.isInput || !plan.present[i]) continue;
    const bool direct = i < plan.direct.size() && plan.direct[i] != 0;
    elements.push_back(
        transfer(driver::kReqCmdFromDevice, b.deviceOffset,
                 direct ? plan.direct[i] : driver::makeIova(plan.outputBo, static_cast<uint32_t>(b.stagingOffset)),
                 direct ? plan.directBytes[i] : b.deviceSize));
  }
  elements.push_back(transfer(driver::kReqCmdFromDevice, layout.responseDescriptorOffset,
                              driver::makeIova(plan.outputBo, static_cast<uint32_t>(layout.responseDescriptorStaging)),
                              driver::kDescriptorBytes));
  qaic_sem wait{};
  wait.index = static_cast<uint8_t>(layout.doneSemaphore);
  wait.presync = 1;
  wait.cmd = QAIC_SEM_WAIT_GT_0;
  elements[firstDownload].semCmd[0] = driver::encodeSem(wait);
  qaic_sem release{};
  release.val = 1;
  release.index = static_cast<uint8_t>(layout.doneSemaphore);
  release.cmd = QAIC_SEM_DEC;
  elements.back().semCmd[1] = driver::encodeSem(release);
  elements.back().cmd |= driver::kReqCmdCompletion;
  return elements;
}

ResponseInfo readResponseDescriptor(std::span<const std::byte> in, const ProgramLayout& layout) {
  const auto header = get<driver::ResponseDescriptorHeader>(in, 0);
  if (header.magic != driver::kResponseDescriptorMagic || header.version != driver::kDescriptorVersion)
    throw Error(QS_DEVICE_ERROR, "response descriptor: bad magic or version");
  if (header.bufferCount != layout.buffers.size())
    throw Error(QS_DEVICE_ERROR, "response descriptor: bufferCount " + std::to_string(header.bufferCount) +
                                     " != " + std::to_string(layout.buffers.size()));
  ResponseInfo info;
  info.status = static_cast<uint16_t>(header.status);
  info.present.resize(layout.buffers.size());
  info.dims.resize(layout.buffers.size());
  for (std::size_t i = 0; i < layout.buffers.size(); ++i) {
    const auto entry = get<driver::ResponseDescriptorEntry>(
        in, sizeof header + i * sizeof(driver::ResponseDescriptorEntry));
    info.present[i] = entry.present != 0;
    if (!info.present[i]) continue;
    if (entry.rank > driver::kDescriptorMaxRank)
      throw Error(QS_DEVICE_ERROR,
                  "response descriptor: buffer '" + layout.buffers[i].name + "' rank " + std::to_string(entry.rank));
    info.dims[i].assign(entry.dims, entry.dims + entry.rank);
  }
  const auto times = get<driver::ResponseTimestamps>(in, driver::kResponseTimestampsOffset);
  if (times.programStartNs != 0 && times.programEndNs >= times.programStartNs) {
    using std::chrono::nanoseconds;
    using TimePoint = std::chrono::steady_clock::time_point;
    info.programRun.emplace(
        TimePoint(std::chrono::duration_cast<TimePoint::duration>(nanoseconds(times.programStartNs))),
        TimePoint(std::chrono::duration_cast<TimePoint::duration>(nanoseconds(times.programEndNs))));
  }
  return info;
}

std::string readResponseDiagnostic(std::span<const std::byte> in, const ProgramLayout& layout) {
  const uint64_t offset = driver::responseDiagnosticOffset(static_cast<uint32_t>(layout.buffers.size()));
  const uint64_t end = std::min<uint64_t>(in.size(), driver::kResponseDiagnosticEnd);
  if (end < offset + sizeof(uint32_t)) return "";
  uint32_t length = 0;
  std::memcpy(&length, in.data() + offset, sizeof length);
  length = static_cast<uint32_t>(std::min<uint64_t>(length, end - offset - sizeof length));
  std::string text(reinterpret_cast<const char*>(in.data() + offset + sizeof length), length);
  for (char& ch : text) {  // the device's words, kept to one printable line
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  }
  return text;
}

}  // namespace qaic::rt
