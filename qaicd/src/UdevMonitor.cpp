// SPDX-License-Identifier: Apache-2.0
#include "UdevMonitor.hpp"

#include <libudev.h>

namespace qaic::qaicd {

Result<std::unique_ptr<UdevMonitor>> UdevMonitor::create() {
  udev* context = ::udev_new();
  if (context == nullptr) return SysError{ENOMEM, "udev_new"};
  udev_monitor* monitor = ::udev_monitor_new_from_netlink(context, "udev");
  if (monitor == nullptr) {
    ::udev_unref(context);
    return SysError{EPROTONOSUPPORT, "udev_monitor_new_from_netlink"};
  }
  int rc = ::udev_monitor_filter_add_match_subsystem_devtype(monitor, "accel", nullptr);
  if (rc >= 0) rc = ::udev_monitor_enable_receiving(monitor);
  if (rc < 0) {
    ::udev_monitor_unref(monitor);
    ::udev_unref(context);
    return SysError{-rc, "udev monitor for subsystem accel"};
  }
  return std::unique_ptr<UdevMonitor>(new UdevMonitor(context, monitor));
}

UdevMonitor::~UdevMonitor() {
  ::udev_monitor_unref(monitor_);
  ::udev_unref(udev_);
}

int UdevMonitor::fd() const { return ::udev_monitor_get_fd(monitor_); }

bool UdevMonitor::drain() {
  bool any = false;
  // The monitor's socket is non-blocking: receive returns nullptr once it is empty.
  while (udev_device* device = ::udev_monitor_receive_device(monitor_)) {
    any = true;
    ::udev_device_unref(device);
  }
  return any;
}

}  // namespace qaic::qaicd
