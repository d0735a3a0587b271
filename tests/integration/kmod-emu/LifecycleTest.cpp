// SPDX-License-Identifier: Apache-2.0
// The emulator's own life cycle as the fixture relies on it: --daemon returns once the tree is
// visible, SIGTERM stops it and unmounts its root, and a client that held the device open sees
// the device gone rather than hanging.
#include <unistd.h>

#include <fstream>

#include "DeviceClient.hpp"
#include "EmuTest.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;

bool mountedAt(const std::filesystem::path& root) {
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mounts, line))
    if (line.find(" " + root.string() + " ") != std::string::npos) return true;
  return false;
}

TEST(EmulatorLifecycle, SigtermStopsTheDaemonAndUnmountsItsRoot) {
  EmulatorProcess emu;
  const auto root = emu.root().path();
  ASSERT_TRUE(mountedAt(root));
  EXPECT_TRUE(std::filesystem::exists(emu.root().nodePath(0)));
  EXPECT_TRUE(emu.stop()) << "SIGTERM did not stop qaic-emu within 5 s (or it left its root "
                             "mounted)\n"
                          << emu.log();
  EXPECT_FALSE(mountedAt(root));
}

TEST(EmulatorLifecycle, SigtermWithAClientHoldingTheDeviceStillStops) {
  EmulatorProcess emu;
  auto node = DeviceNode::open(emu.root(), 0);
  ASSERT_TRUE(node) << node.message();
  auto bo = BufferObject::create(*node, 4096);
  ASSERT_TRUE(bo) << bo.message();
  EXPECT_TRUE(emu.stop()) << emu.log();
  auto after = queryStatus(*node);
  ASSERT_FALSE(after) << "MANAGE answered after the device stopped";
  EXPECT_TRUE(after.error() == ENODEV || after.error() == ENOTCONN) << after.message();
}

}  // namespace
}  // namespace qaic::emu::test
