#include "ProgramLoad.hpp"

#include <qaic/Errors.hpp>

#include "driver/ManageMessage.hpp"

namespace qaic::rt::engine {

ProgramLoad::ProgramLoad(std::shared_ptr<const driver::DeviceNode> node, uint32_t loadId,
                         std::span<const uint8_t> container, const std::string& what)
    : node_(std::move(node)), loadId_(loadId) {
  if (container.size() > driver::kMaxLoadBytes)
    throw Error(QS_INCOMPATIBLE, what + ": container of " + std::to_string(container.size()) +
                                     " bytes exceeds the device's load limit");
  driver::ManageBuffer message =
      driver::ManageMessageBuilder()
          .dmaTransfer(loadId_, reinterpret_cast<uint64_t>(container.data()), container.size())
          .take();
  auto rc = node_->manage(message);
  if (!rc) {
    const int e = rc.error();
    const QStatus status = e == ENOSPC || e == ENOMEM ? QS_NO_RESOURCES
                           : e == ENODEV              ? QS_DEV_REMOVED
                           : e == EINVAL || e == EBADMSG || e == ENOEXEC ? QS_INCOMPATIBLE
                                                                         : QS_ERROR;
    throw Error(status, what + ": loading the program container on device " +
                            std::to_string(node_->index()) + ": " + rc.message());
  }
}

ProgramLoad::~ProgramLoad() {
  try {
    driver::ManageBuffer message = driver::ManageMessageBuilder().dmaTransfer(loadId_, 0, 0).take();
    (void)node_->manage(message);
  } catch (...) {
    // Releasing is best effort: closing the device file releases the load anyway.
  }
}

}  // namespace qaic::rt::engine
