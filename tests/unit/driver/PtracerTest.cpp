// SPDX-License-Identifier: Apache-2.0
#include "driver/Ptracer.hpp"

#include <gtest/gtest.h>

#include "TempDir.hpp"

namespace qaic::driver {
namespace {

TEST(Ptracer, NothingToDoBelowScopeOne) {
  testing::TempDir dir;
  dir.writeFile("yama/ptrace_scope", "0\n");
  dir.writeFile("dev/qaic-emu/pid", "not a pid\n");
  EXPECT_TRUE(declareEmulatorPtracer(SysfsDevice(dir.path() / "dev"), dir.path() / "yama/ptrace_scope"));
}

TEST(Ptracer, NothingToDoWithoutYama) {
  testing::TempDir dir;
  EXPECT_TRUE(declareEmulatorPtracer(SysfsDevice(dir.path()), dir.path() / "absent"));
}

TEST(Ptracer, RealDeviceWithoutEmuPidIsFine) {
  testing::TempDir dir;
  dir.writeFile("ptrace_scope", "1\n");
  EXPECT_TRUE(declareEmulatorPtracer(SysfsDevice(dir.path() / "dev"), dir.path() / "ptrace_scope"));
}

TEST(Ptracer, ScopeOneWithBadEmuPidIsAnError) {
  testing::TempDir dir;
  dir.writeFile("ptrace_scope", "1\n");
  dir.writeFile("dev/qaic-emu/pid", "0\n");
  auto zero = declareEmulatorPtracer(SysfsDevice(dir.path() / "dev"), dir.path() / "ptrace_scope");
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error(), EINVAL);
  dir.writeFile("dev/qaic-emu/pid", "12x\n");
  auto garbage = declareEmulatorPtracer(SysfsDevice(dir.path() / "dev"), dir.path() / "ptrace_scope");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error(), EINVAL);
}

}  // namespace
}  // namespace qaic::driver
