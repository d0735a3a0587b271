// SPDX-License-Identifier: Apache-2.0
// The emulator reads embedded user pointers from its clients' memory (process_vm_readv) and takes
// their completion eventfds (pidfd_getfd), both under the ptrace access rule. With Yama's
// ptrace_scope at 1 only a declared tracer may do that, so a client declares the emulator.
#pragma once

#include <filesystem>

#include "base/Result.hpp"
#include "driver/SysfsDevice.hpp"

namespace qaic::driver {

// When `yamaScopeFile` says 1 and the device publishes qaic-emu/pid, calls
// prctl(PR_SET_PTRACER, <that pid>). Nothing to do (success) without Yama, at other scopes, or
// for a real device (no qaic-emu/pid).
Result<void> declareEmulatorPtracer(const SysfsDevice& device,
                                    const std::filesystem::path& yamaScopeFile = "/proc/sys/kernel/yama/ptrace_scope");

}  // namespace qaic::driver
