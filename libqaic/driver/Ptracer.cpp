// SPDX-License-Identifier: Apache-2.0
#include "driver/Ptracer.hpp"
#include "driver/SysfsNames.hpp"

#include <sys/prctl.h>

namespace qaic::driver {

Result<void> declareEmulatorPtracer(const SysfsDevice& device, const std::filesystem::path& yamaScopeFile) {
  auto scope = SysfsDevice(yamaScopeFile.parent_path()).readU64(yamaScopeFile.filename().string());
  if (!scope || *scope != 1) return {};
  auto pid = device.readU64(driver::sysfs::kEmuPid);
  if (!pid) return pid.error() == ENOENT ? Result<void>() : Result<void>(pid.sysError());
  if (*pid == 0 || *pid > 0x7fffffff) return SysError{EINVAL, std::string(driver::sysfs::kEmuPid) + " out of range"};
  if (::prctl(PR_SET_PTRACER, static_cast<unsigned long>(*pid), 0, 0, 0) != 0)
    return lastError("prctl(PR_SET_PTRACER)");
  return {};
}

}  // namespace qaic::driver
