// Resource groups carried in MANAGE passthrough (device-protocol.md section 7): a reservation
// takes resources off the device, activations of that file draw only from it, close returns it.
#include <unistd.h>

#include "EmuTest.hpp"
#include "ReluProgram.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;

ResourceGroupRequest request(ResourceGroupOp op, uint32_t group, uint32_t nsps, uint32_t dbcs) {
  ResourceGroupRequest r{};
  r.magic = kResourceGroupMagic;
  r.version = kResourceGroupVersion;
  r.op = static_cast<uint32_t>(op);
  r.groupId = group;
  r.resources.numNsp = nsps;
  r.resources.numVc = dbcs;
  if (op == ResourceGroupOp::Reserve) {
    // Activations draw device memory and semaphores from the group too.
    r.resources.numSem = kSemaphoresPerDbc;
    r.resources.ddrSize = 64ull << 20;
  }
  return r;
}

TEST_F(EmuTest, ReservationTakesNspsAndBoundsActivations) {
  auto node = openNode();
  auto group = resourceGroup(node, request(ResourceGroupOp::Reserve, 0, 2, 1));
  ASSERT_TRUE(group) << group.message();
  EXPECT_EQ(group->resources.numNsp, 2u);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 2);

  const auto threeCores = reluProgram(3);
  ASSERT_TRUE(loadProgram(node, threeCores, 1));
  EXPECT_TRUE(failsWith(activate(node, 1, 0, 16, 0), ENOSPC)) << "an activation exceeded its file's resource group";

  const uint32_t dbc = activateRelu(node, 2);
  EXPECT_LT(dbc, kTestDbcs);
  ASSERT_TRUE(loadProgram(node, relu_, 3));
  EXPECT_TRUE(failsWith(activate(node, 3, 0, 16, 0), ENOSPC)) << "a second DBC from a group holding one";
}

TEST_F(EmuTest, ReservingMoreThanTheDeviceHasIsEnospc) {
  auto node = openNode();
  EXPECT_TRUE(failsWith(resourceGroup(node, request(ResourceGroupOp::Reserve, 0, kTestNsps + 1, 1)), ENOSPC));
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
}

TEST_F(EmuTest, ReleaseAndCloseReturnTheGroup) {
  auto node = openNode();
  auto group = resourceGroup(node, request(ResourceGroupOp::Reserve, 0, 3, 1));
  ASSERT_TRUE(group) << group.message();
  auto query = resourceGroup(node, request(ResourceGroupOp::Query, group->groupId, 0, 0));
  ASSERT_TRUE(query) << query.message();
  EXPECT_EQ(query->resources.numNsp, 3u);
  auto released = resourceGroup(node, request(ResourceGroupOp::Release, group->groupId, 0, 0));
  ASSERT_TRUE(released) << released.message();
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);

  {
    auto holder = openNode();
    ASSERT_TRUE(resourceGroup(holder, request(ResourceGroupOp::Reserve, 0, kTestNsps, 1)));
    EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), 0u);
  }
  for (int i = 0; i < 500 && attribute(driver::sysfs::kEmuNspFree) != kTestNsps; ++i) ::usleep(10000);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps) << "closing the file did not release its group";
}

TEST_F(EmuTest, MalformedResourceGroupRequestIsRefused) {
  auto node = openNode();
  auto bad = request(ResourceGroupOp::Reserve, 0, 1, 1);
  bad.magic = 0x12345678;
  auto r = resourceGroup(node, bad);
  ASSERT_FALSE(r) << "a passthrough with a wrong magic reserved a group";
  EXPECT_TRUE(r.error() == EINVAL || r.error() == EPROTO) << r.message();
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
}

}  // namespace
}  // namespace qaic::emu::test
