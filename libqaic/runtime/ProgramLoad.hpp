// A program container transferred to a device (DMA_XFER_FROM_USR under a load id,
// docs/device-protocol.md section 7). Released (a transfer of size 0) on destruction; the device
// also drops it when the context's device file closes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "driver/DeviceNode.hpp"

namespace qaic::rt::engine {

class ProgramLoad {
 public:
  // Throws Error (QS_INCOMPATIBLE when the device rejects the container, QS_NO_RESOURCES,
  // QS_DEV_REMOVED, QS_ERROR), naming `what`.
  ProgramLoad(std::shared_ptr<const driver::DeviceNode> node, uint32_t loadId,
              std::span<const uint8_t> container, const std::string& what);
  ~ProgramLoad();
  ProgramLoad(const ProgramLoad&) = delete;
  ProgramLoad& operator=(const ProgramLoad&) = delete;

  uint32_t loadId() const { return loadId_; }

 private:
  std::shared_ptr<const driver::DeviceNode> node_;
  uint32_t loadId_;
};

}  // namespace qaic::rt::engine
