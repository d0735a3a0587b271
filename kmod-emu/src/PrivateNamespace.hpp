// SPDX-License-Identifier: Apache-2.0
// qaic-emu --namespace: a command run where the emulator's tree stands in for the host's, so a
// program that knows only /dev/accel and /sys (udev, a PCI scan, the vendor's tools) finds the
// emulated cards as it would real ones (docs/emulator.md, "Showing the card to unmodified
// programs").
#pragma once

#include <string>
#include <vector>

namespace qaic::emu {

// Forks `command` into a private mount namespace (a user namespace too when the caller lacks
// CAP_SYS_ADMIN) where root/dev/accel is bound over /dev/accel and root/sys over /sys, with the
// environment libudev needs to trust that /sys and without QAIC_ROOT, and waits for it, passing
// SIGTERM/SIGINT on (the caller blocks them and SIGCHLD in every thread); returns its exit status
// as a shell does (128 + signal when a signal ended it), 126 when the namespace could not be made,
// 127 when the command could not be run.
int runInEmulatedNamespace(const std::string& root, const std::vector<std::string>& command);

}  // namespace qaic::emu
