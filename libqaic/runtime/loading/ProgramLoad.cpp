// SPDX-License-Identifier: Apache-2.0
#include "runtime/loading/ProgramLoad.hpp"

#include <qaic/Errors.hpp>

#include "driver/ManageCalls.hpp"
#include "runtime/objects/StatusCodes.hpp"

namespace qaic::rt {

ProgramLoad::ProgramLoad(std::shared_ptr<const driver::DeviceNode> node, uint32_t loadId,
                         std::span<const std::byte> container, const std::string& what)
    : node_(std::move(node)), loadId_(loadId) {
  auto loaded = driver::loadProgram(*node_, container, loadId_);
  if (!loaded)
    throw Error(statusForErrno(loaded.error()), what + ": loading the program container on device " +
                                                    std::to_string(node_->index()) + ": " + loaded.message());
}

ProgramLoad::~ProgramLoad() {
  // Best effort: closing the device file releases the load anyway.
  (void)driver::releaseProgram(*node_, loadId_);
}

}  // namespace qaic::rt
