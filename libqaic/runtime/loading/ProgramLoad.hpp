// SPDX-License-Identifier: Apache-2.0
// libqaic/runtime/loading: putting a program container on a device for an inference set: the
// validated image a Qpc stands for (QAicQpcObj), its IO descriptor as the API's types
// (QpcMappings), what the data path derives from one program (ProgramLayout), the activations'
// resources reserved before anything else is built (ResourceReservation) and the container's
// load onto a device (ProgramLoad, this header). Depends on container/ (the image,
// ResourceNeeds), driver/ (MANAGE calls), kernels/format (device-format sizes) and, in objects/,
// on the context's device nodes and log and on StatusCodes. front/ (Qpc, resourcesFor),
// objects/ (a set holds its loads and reservation) and datapath/ (ProgramLayout) depend on it.
//
// A program container transferred to a device under a load id (driver::loadProgram,
// docs/device-protocol.md section 7), released (driver::releaseProgram) on destruction; the
// device also drops it when the context's device file closes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "driver/DeviceNode.hpp"

namespace qaic::rt {

class ProgramLoad {
 public:
  // Throws Error (QS_INCOMPATIBLE when the device rejects the container, QS_NO_RESOURCES,
  // QS_DEV_REMOVED, QS_ERROR), naming `what`.
  ProgramLoad(std::shared_ptr<const driver::DeviceNode> node, uint32_t loadId, std::span<const std::byte> container,
              const std::string& what);
  ~ProgramLoad();
  ProgramLoad(const ProgramLoad&) = delete;
  ProgramLoad& operator=(const ProgramLoad&) = delete;

  uint32_t loadId() const { return loadId_; }

 private:
  std::shared_ptr<const driver::DeviceNode> node_;
  uint32_t loadId_;
};

}  // namespace qaic::rt
