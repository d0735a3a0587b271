// SPDX-License-Identifier: Apache-2.0
#include "driver/DeviceNode.hpp"
#include "driver/DeviceRoot.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "TempDir.hpp"

namespace qaic::driver {
namespace {

TEST(DeviceRoot, PathsHangUnderTheRoot) {
  DeviceRoot root("/tmp/emu");
  EXPECT_EQ(root.nodePath(3), "/tmp/emu/dev/accel/accel3");
  EXPECT_EQ(root.sysfsPath(0), "/tmp/emu/sys/class/accel/accel0");
}

TEST(DeviceRoot, EnvironmentUnsetOrEmptyMeansSlash) {
  const char* saved = std::getenv("QAIC_ROOT");
  const std::string savedValue = saved ? saved : "";
  ::unsetenv("QAIC_ROOT");
  EXPECT_EQ(DeviceRoot::fromEnvironment().path(), "/");
  ::setenv("QAIC_ROOT", "", 1);
  EXPECT_EQ(DeviceRoot::fromEnvironment().path(), "/");
  ::setenv("QAIC_ROOT", "/srv/emu0", 1);
  EXPECT_EQ(DeviceRoot::fromEnvironment().nodePath(1), "/srv/emu0/dev/accel/accel1");
  if (saved)
    ::setenv("QAIC_ROOT", savedValue.c_str(), 1);
  else
    ::unsetenv("QAIC_ROOT");
}

TEST(DeviceRoot, ParsesOnlyExactAccelNames) {
  unsigned index = 99;
  EXPECT_TRUE(parseAccelName("accel0", index));
  EXPECT_EQ(index, 0u);
  EXPECT_TRUE(parseAccelName("accel12", index));
  EXPECT_EQ(index, 12u);
  for (const char* bad :
       {"accel", "accel1x", "accel-1", "accel+1", "xaccel1", "card0", "", "accel99999999999999999999"})
    EXPECT_FALSE(parseAccelName(bad, index)) << bad;
}

TEST(DeviceRoot, ListsDevicesInOrderIgnoringOtherEntries) {
  testing::TempDir dir;
  for (const char* name : {"accel10", "accel2", "accel0", "accelX", "controlD64"})
    dir.writeFile(std::filesystem::path("dev/accel") / name, "");
  EXPECT_EQ(DeviceRoot(dir.path()).listDevices(), (std::vector<unsigned>{0, 2, 10}));
}

TEST(DeviceRoot, MissingTreeMeansNoDevices) {
  testing::TempDir dir;
  EXPECT_TRUE(DeviceRoot(dir.path()).listDevices().empty());
  EXPECT_TRUE(DeviceRoot(dir.path() / "absent").listDevices().empty());
}

// DeviceNode::open asks the node's driver (drmGetVersion) before anything else: a file that is
// no DRM node at all, like any node of another driver, is refused with its path in the message.
TEST(DeviceNode, ANodeThatIsNotQaicIsRefusedByName) {
  testing::TempDir dir;
  dir.writeFile("dev/accel/accel0", "not a device");
  std::filesystem::create_symlink("/dev/null", dir.path() / "dev/accel/accel1");
  for (unsigned index : {0u, 1u}) {
    auto node = DeviceNode::open(DeviceRoot(dir.path()), index);
    ASSERT_FALSE(node) << "accel" << index << " was taken for a qaic device";
    EXPECT_NE(node.message().find((dir.path() / "dev/accel").string() + "/accel" + std::to_string(index)),
              std::string::npos)
        << node.message();
  }
}

}  // namespace
}  // namespace qaic::driver
