// SPDX-License-Identifier: Apache-2.0
// Real devices (root "/"): a libudev monitor for the "accel" subsystem whose fd the event loop
// watches; every event only triggers a rescan of the tree, so the monitor carries no device
// state. Not exercised by the test suite (there is no udev in the emulated setup).
#pragma once

#include <memory>

#include "base/Result.hpp"

struct udev;
struct udev_monitor;

namespace qaic::qaicd {

class UdevMonitor {
 public:
  static Result<std::unique_ptr<UdevMonitor>> create();
  ~UdevMonitor();
  UdevMonitor(const UdevMonitor&) = delete;
  UdevMonitor& operator=(const UdevMonitor&) = delete;

  int fd() const;
  // Reads every pending event; true when at least one arrived.
  bool drain();

 private:
  UdevMonitor(udev* context, udev_monitor* monitor) : udev_(context), monitor_(monitor) {}
  udev* udev_;
  udev_monitor* monitor_;
};

}  // namespace qaic::qaicd
