// SPDX-License-Identifier: Apache-2.0
// The device resources of an inference set's activations, reserved on every device the set
// places them on before the set starts a thread, creates a buffer object or builds a pipeline:
// a set the devices cannot hold is refused by one MANAGE call per device, whatever the count it
// asks for. Each reservation is a named resource group (DeviceProtocol.hpp section 6) of the
// context's open file; the set's activations name it in ACTIVATE and draw from it alone, so
// other sets of the same context neither take from it nor are blocked by it. Released when the
// reservation goes, after the activations that drew from it were deactivated (closing the file
// releases it too).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <qaic/Context.hpp>

#include "driver/DeviceNode.hpp"

namespace qaic::container {
class QpcImage;
}

namespace qaic::rt {

class ContextImpl;

class ResourceReservation {
 public:
  // Reserves, on each device of `activationsPerDevice`, what that many activations of program
  // `programIndex` of `image` need (container::resourceNeeds). All or nothing: throws
  // Error(QS_NO_RESOURCES) naming `what`, the activations asked for, what they need and what the
  // device has free (when device memory alone is short, the emulator's ENOMEM: the program's
  // constants, IO region and retained state against the memory free and total), having released
  // whatever it reserved on the other devices;
  // QS_DEV_REMOVED when a device is gone.
  ResourceReservation(const ContextImpl& context, const container::QpcImage& image, uint32_t programIndex,
                      const std::map<QID, uint32_t>& activationsPerDevice, const std::string& what);
  ~ResourceReservation();
  ResourceReservation(const ResourceReservation&) = delete;
  ResourceReservation& operator=(const ResourceReservation&) = delete;

  // The resource group of `device` that its activations name in ACTIVATE.
  uint32_t groupOn(QID device) const;

 private:
  struct Group {
    std::shared_ptr<const driver::DeviceNode> node;
    uint32_t id = 0;
  };
  void releaseAll() noexcept;

  const ContextImpl& context_;
  std::map<QID, Group> groups_;
};

}  // namespace qaic::rt
