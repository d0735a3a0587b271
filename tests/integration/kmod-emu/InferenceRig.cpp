// SPDX-License-Identifier: Apache-2.0
#include "InferenceRig.hpp"

#include <cstring>
#include <stdexcept>

#include "DeviceClient.hpp"

namespace qaic::emu::test {

using namespace qaic::driver;

namespace {

constexpr const char* kRequestDescriptor = "request descriptor";
constexpr const char* kResponseDescriptor = "response descriptor";

}  // namespace

InferenceRig::InferenceRig(const DeviceNode& node, const container::QpcImage& image, uint32_t programIndex,
                           uint32_t dbcId)
    : node_(node), image_(image), program_(image.programs().at(programIndex)), dbcId_(dbcId) {
  addSlot(kRequestDescriptor, QAIC_DIR_TO_DEVICE, kDescriptorBytes, program_.requestDescriptorOffset);
  std::vector<const container::QpcBuffer*> inputs, outputs;
  for (uint32_t index : program_.bufferIndices) {
    const auto& b = image.buffers().at(index);
    (b.io.direction == ir::Direction::In ? inputs : outputs).push_back(&b);
  }
  for (const auto* b : inputs) addSlot(b->io.bufferName, QAIC_DIR_TO_DEVICE, b->deviceSize, b->deviceOffset);
  for (const auto* b : outputs) addSlot(b->io.bufferName, QAIC_DIR_FROM_DEVICE, b->deviceSize, b->deviceOffset);
  addSlot(kResponseDescriptor, QAIC_DIR_FROM_DEVICE, kDescriptorBytes, program_.responseDescriptorOffset);

  // The last input rings the doorbell that starts the program.
  Slot& lastInput = slots_[inputs.size()];
  lastInput.slice.db_addr = program_.doorbellAddress;
  lastInput.slice.db_len = 32;
  lastInput.slice.db_data = 1;
  // Outputs wait for the program; the response descriptor takes the semaphore back.
  Slot& firstOutput = slots_[inputs.size() + 1];
  firstOutput.slice.sem0 = {0, static_cast<uint8_t>(program_.doneSemaphore), 1, QAIC_SEM_WAIT_GT_0, 0, 0};
  slots_.back().slice.sem1 = {1, static_cast<uint8_t>(program_.doneSemaphore), 0, QAIC_SEM_DEC, 0, 0};
}

void InferenceRig::addSlot(std::string name, uint32_t dir, std::size_t bytes, uint64_t deviceAddress) {
  auto bo = BufferObject::create(node_, bytes);
  if (!bo) throw std::runtime_error("BO for " + name + ": " + bo.message());
  const uint32_t handle = bo->handle();
  Slot slot{std::move(name), dir, std::move(*bo), {}, handle};
  slot.slice.size = bytes;
  slot.slice.dev_addr = deviceAddress;
  slot.slice.offset = 0;
  slots_.push_back(std::move(slot));
}

void InferenceRig::attachAll() {
  for (const Slot& s : slots_) {
    qaic_attach_slice_hdr hdr{};
    hdr.dbc_id = dbcId_;
    hdr.handle = s.handle;
    hdr.dir = s.dir;
    hdr.size = s.bo.size();
    if (auto r = node_.attachSlices(hdr, std::span(&s.slice, 1)); !r)
      throw std::runtime_error("ATTACH_SLICE_BO for " + s.name + ": " + r.message());
  }
}

void InferenceRig::useHandle(const std::string& name, uint32_t handle) {
  for (Slot& s : slots_)
    if (s.name == name) s.handle = handle;
}

const InferenceRig::Slot& InferenceRig::slot(const std::string& name) const {
  for (const Slot& s : slots_)
    if (s.name == name) return s;
  throw std::runtime_error("no buffer " + name);
}

std::span<std::byte> InferenceRig::buffer(const std::string& name) { return slot(name).bo.bytes(); }

void InferenceRig::writeRequestDescriptor(uint32_t sequence) {
  auto bytes = buffer(kRequestDescriptor);
  std::memset(bytes.data(), 0, bytes.size());
  RequestDescriptorHeader hdr{kRequestDescriptorMagic, kDescriptorVersion,
                              static_cast<uint32_t>(image_.buffers().size()), sequence};
  std::memcpy(bytes.data(), &hdr, sizeof hdr);
  for (std::size_t i = 0; i < image_.buffers().size(); ++i) {
    const auto& dims = image_.buffers()[i].io.dims;
    RequestDescriptorEntry e{};
    e.present = 1;
    e.rank = static_cast<uint32_t>(dims.size());
    for (std::size_t d = 0; d < dims.size() && d < kDescriptorMaxRank; ++d) e.dims[d] = static_cast<uint32_t>(dims[d]);
    std::memcpy(bytes.data() + sizeof hdr + i * sizeof e, &e, sizeof e);
  }
}

ResponseDescriptorHeader InferenceRig::responseHeader() const {
  ResponseDescriptorHeader hdr;
  std::memcpy(&hdr, slot(kResponseDescriptor).bo.data(), sizeof hdr);
  return hdr;
}

std::vector<qaic_execute_entry> InferenceRig::executeEntries() const {
  std::vector<qaic_execute_entry> entries;
  for (const Slot& s : slots_) entries.push_back({s.handle, s.dir});
  return entries;
}

std::vector<RequestElement> InferenceRig::ringElements(uint16_t reqId) const {
  std::vector<RequestElement> elements;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    elements.push_back(
        sliceRequestElement(reqId, slots_[i].handle, slots_[i].dir, slots_[i].slice, i + 1 == slots_.size()));
  return elements;
}

}  // namespace qaic::emu::test
