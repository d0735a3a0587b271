// SPDX-License-Identifier: Apache-2.0
// Activation, the DBC window handed out through QAIC_EMU_DBC_INFO, NSP accounting in sysfs,
// TERMINATE-on-close and contention between processes.
#include <unistd.h>

#include <thread>

#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "Process.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

TEST_F(EmuTest, ActivationTakesNspsAndDeactivationReturnsThem) {
  auto node = openNode();
  ASSERT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
  const uint32_t dbc = activateRelu(node);
  EXPECT_LT(dbc, kTestDbcs);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 1);
  ASSERT_TRUE(deactivate(node, dbc));
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
}

TEST_F(EmuTest, DeactivatingADbcOneDoesNotOwnIsRefused) {
  auto owner = openNode();
  auto other = openNode();
  const uint32_t dbc = activateRelu(owner);
  auto r = deactivate(other, dbc);
  ASSERT_FALSE(r) << "another open file deactivated DBC " << dbc;
  EXPECT_EQ(r.error(), EPERM) << r.message();  // mainline's answer for a DBC not the file's
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 1);
  auto idle = deactivate(other, (dbc + 1) % kTestDbcs);
  ASSERT_FALSE(idle) << "deactivated a DBC nobody activated";
  EXPECT_EQ(idle.error(), EPERM) << idle.message();
}

TEST_F(EmuTest, DbcInfoDescribesAWindowOnlyTheOwnerGets) {
  auto owner = openNode();
  auto other = openNode();
  const uint32_t dbc = activateRelu(owner, 1, 32);
  auto info = owner.emuDbcInfo(dbc);
  ASSERT_TRUE(info) << info.message();
  EXPECT_EQ(info->nelem, 32u);
  EXPECT_EQ(info->window_size, dbcWindowBytes(32));
  EXPECT_EQ(info->request_offset, requestFifoOffset(32));
  EXPECT_EQ(info->response_offset, responseFifoOffset(32));
  EXPECT_TRUE(DbcWindow::validate(*info)) << DbcWindow::validate(*info).message();

  auto window = DbcWindow::map(owner, dbc);
  ASSERT_TRUE(window) << window.message();
  EXPECT_EQ(window->deviceStatus(), DeviceStatus::Ok);
  EXPECT_EQ(window->requestSlotsFree(), 31u);

  EXPECT_TRUE(failsWith(other.emuDbcInfo(dbc), EPERM));

  EXPECT_TRUE(failsWith(owner.emuDbcInfo(kTestDbcs), EINVAL));

  qaic_emu_dbc_info padded{};
  padded.dbc_id = dbc;
  padded.pad = 1;
  EXPECT_TRUE(failsWith(owner.rawIoctl(DRM_IOCTL_QAIC_EMU_DBC_INFO, &padded, "EMU_DBC_INFO"), EINVAL));
}

TEST_F(EmuTest, ReactivationGetsANewWindowGeneration) {
  auto node = openNode();
  const uint32_t first = activateRelu(node, 1);
  auto before = node.emuDbcInfo(first);
  ASSERT_TRUE(before);
  ASSERT_TRUE(deactivate(node, first));
  auto stale = node.emuDbcInfo(first);
  ASSERT_FALSE(stale) << "a deactivated DBC still has a window";
  // Take every DBC so the old one is certainly among them.
  bool sawSameDbc = false;
  for (uint32_t i = 0; i < kTestDbcs; ++i) {
    auto dbc = activate(node, 1, 0, 16, 0);
    ASSERT_TRUE(dbc) << dbc.message();
    if (*dbc != first) continue;
    sawSameDbc = true;
    auto after = node.emuDbcInfo(*dbc);
    ASSERT_TRUE(after);
    EXPECT_NE(after->generation, before->generation);
    EXPECT_STRNE(after->name, before->name);
  }
  EXPECT_TRUE(sawSameDbc);
}

TEST_F(EmuTest, EveryDbcTakenThenEnospc) {
  auto node = openNode();
  for (uint32_t i = 0; i < kTestDbcs; ++i) activateRelu(node, i + 1);
  ASSERT_TRUE(loadProgram(node, relu_, 99));
  EXPECT_TRUE(failsWith(activate(node, 99, 0, 16, 0), ENOSPC)) << "a fifth DBC on a four-DBC device";
}

TEST_F(EmuTest, ClosingTheFileFreesEverything) {
  {
    auto node = openNode();
    for (uint32_t i = 0; i < kTestDbcs; ++i) activateRelu(node, i + 1);
    auto bo = BufferObject::create(node, 1 << 20);
    ASSERT_TRUE(bo) << bo.message();
    EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), 0u);
  }
  // TERMINATE runs when the file closes; the release of the FUSE file can trail close(2).
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (attribute(driver::sysfs::kEmuNspFree) != kTestNsps && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
  auto again = openNode();
  for (uint32_t i = 0; i < kTestDbcs; ++i) {
    ASSERT_TRUE(loadProgram(again, relu_, 7 + i));
    auto dbc = activate(again, 7 + i, 0, 16, 0);
    EXPECT_TRUE(dbc) << "DBC not freed by close: " << dbc.message();
  }
}

TEST_F(EmuTest, SecondProcessContendingForNspsGetsEnospc) {
  auto node = openNode();
  const auto wholeDevice = reluProgram(kTestNsps);
  ASSERT_TRUE(loadProgram(node, wholeDevice, 1));
  auto dbc = activate(node, 1, 0, 16, 0);
  ASSERT_TRUE(dbc) << dbc.message();
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), 0u);

  const DeviceRoot deviceRoot = root();
  auto contender = [&]() -> int {
    auto mine = DeviceNode::open(deviceRoot, 0);
    if (!mine) return 10;
    if (!loadProgram(*mine, relu_, 1)) return 11;
    auto r = activate(*mine, 1, 0, 16, 0);
    if (r) return 12;
    return r.error() == ENOSPC ? 0 : 13;
  };
  const ExitStatus refused = runInChild(contender, 30s);
  ASSERT_TRUE(refused.exited);
  EXPECT_EQ(refused.code, 0) << "10 open, 11 load, 12 activated, 13 wrong errno";

  ASSERT_TRUE(deactivate(node, *dbc));
  auto succeeds = [&]() -> int {
    auto mine = DeviceNode::open(deviceRoot, 0);
    if (!mine || !loadProgram(*mine, relu_, 1)) return 10;
    return activate(*mine, 1, 0, 16, 0) ? 0 : 12;
  };
  const ExitStatus granted = runInChild(succeeds, 30s);
  ASSERT_TRUE(granted.exited);
  EXPECT_EQ(granted.code, 0) << "NSPs freed by deactivation were not available to the next process";
}

}  // namespace
}  // namespace qaic::emu::test
