// SPDX-License-Identifier: Apache-2.0
// Resource groups carried in MANAGE passthrough (device-protocol.md section 7): a reservation
// takes resources off the device, activations of that file draw only from it, close returns it.
#include <unistd.h>

#include "DeviceAttributes.hpp"
#include "EmuTest.hpp"
#include "ReluProgram.hpp"

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
  if (op == ResourceGroupOp::Reserve || op == ResourceGroupOp::ReserveNamed) {
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

// A named group (ReserveNamed) is for the activations that name it in ACTIVATE's pad: they draw
// from it alone, and the file's other activations neither draw from it nor are bound by it.
TEST_F(EmuTest, ANamedGroupServesOnlyTheActivationsNamingIt) {
  auto node = openNode();
  auto named = request(ResourceGroupOp::ReserveNamed, 0, 1, 1);
  auto group = resourceGroup(node, named);
  ASSERT_TRUE(group) << group.message();
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 1);

  // An activation without a name draws from the device, not from the named group.
  const uint32_t unnamed = activateRelu(node, 1);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 2);

  // One naming the group draws from it: the device's free count stays.
  ASSERT_TRUE(loadProgram(node, relu_, 2));
  auto inGroup = activate(node, 2, 0, 16, 0, group->groupId);
  ASSERT_TRUE(inGroup) << inGroup.message();
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 2);
  // The group holds one activation; a second one naming it is refused though the device has room.
  ASSERT_TRUE(loadProgram(node, relu_, 3));
  EXPECT_TRUE(failsWith(activate(node, 3, 0, 16, 0, group->groupId), ENOSPC));
  // A group this file does not hold.
  EXPECT_TRUE(failsWith(activate(node, 3, 0, 16, 0, group->groupId + 1000), EINVAL));

  // The group is busy while its activation draws from it, and comes back whole after.
  auto busy = resourceGroup(node, request(ResourceGroupOp::Release, group->groupId, 0, 0));
  EXPECT_TRUE(failsWith(busy, EBUSY));
  ASSERT_TRUE(deactivate(node, *inGroup));
  ASSERT_TRUE(deactivate(node, unnamed));
  auto released = resourceGroup(node, request(ResourceGroupOp::Release, group->groupId, 0, 0));
  ASSERT_TRUE(released) << released.message();
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
}

// No free NSP or DBC at all: ACTIVATE is refused (before the emulator builds the program and its
// IO region, DeviceManage.cpp), and the same load activates once there is room.
TEST_F(EmuTest, AFullDeviceRefusesAnotherActivationUntilOneEnds) {
  auto node = openNode();
  std::vector<uint32_t> dbcs;
  for (uint32_t i = 0; i < kTestNsps; ++i) dbcs.push_back(activateRelu(node, i + 1));
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), 0u);
  ASSERT_TRUE(loadProgram(node, relu_, 100));
  EXPECT_TRUE(failsWith(activate(node, 100, 0, 16, 0), ENOSPC));
  for (uint32_t dbc : dbcs) ASSERT_TRUE(deactivate(node, dbc));
  EXPECT_TRUE(activate(node, 100, 0, 16, 0));
}

}  // namespace
}  // namespace qaic::emu::test
