// SPDX-License-Identifier: Apache-2.0
// Everything one inference needs, set up by hand through the uAPI the way a runtime does it:
// a BO per descriptor and per IO buffer of a compiled program, each attached as one slice to the
// activation's DBC with the doorbell and semaphores of docs/device-protocol.md section 4.
// Drives a request either through EXECUTE_BO / WAIT_BO or through the mapped ring.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ContainerFiles.hpp"
#include "DeviceClient.hpp"

namespace qaic::emu::test {

class InferenceRig {
 public:
  struct Slot {
    std::string name;  // IO buffer name, or "request descriptor" / "response descriptor"
    uint32_t dir = 0;  // QAIC_DIR_*
    driver::BufferObject bo;
    qaic_attach_slice_entry slice{};
    uint32_t handle = 0;  // what is attached and executed: bo's, or one set by useHandle
  };

  // Throws std::runtime_error naming the ioctl and buffer that failed.
  InferenceRig(const driver::DeviceNode& node, const container::QpcImage& image, uint32_t programIndex, uint32_t dbcId);

  // Creates the BOs and attaches them (separately, so tests can stop in between).
  void attachAll();
  // Attaches and executes `handle` (an imported BO of at least the buffer's size) in place of
  // the rig's own BO for buffer `name`; call before attachAll.
  void useHandle(const std::string& name, uint32_t handle);

  std::span<std::byte> buffer(const std::string& name);
  const Slot& slot(const std::string& name) const;
  // Every IO buffer present at full dims.
  void writeRequestDescriptor(uint32_t sequence);
  driver::ResponseDescriptorHeader responseHeader() const;

  // Ring order: request descriptor, inputs, outputs, response descriptor.
  std::vector<qaic_execute_entry> executeEntries() const;
  uint32_t lastHandle() const { return slots_.back().handle; }
  // One element per slice sharing `reqId`; only the last asks for a response.
  std::vector<driver::RequestElement> ringElements(uint16_t reqId) const;

 private:
  void addSlot(std::string name, uint32_t dir, std::size_t bytes, uint64_t deviceAddress);

  const driver::DeviceNode& node_;
  const container::QpcImage& image_;
  const container::QpcProgram& program_;
  uint32_t dbcId_;
  std::vector<Slot> slots_;
};

}  // namespace qaic::emu::test
