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
