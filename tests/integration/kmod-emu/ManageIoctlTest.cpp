// SPDX-License-Identifier: Apache-2.0
// MANAGE: message limits, transaction checks, program loads and the status transaction.
#include <cstring>

#include "DeviceAttributes.hpp"
#include "EmuTest.hpp"
#include "EmulatorProcess.hpp"
#include "MultiDeviceProgram.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;

Result<void> sendRaw(const DeviceNode& node, uint32_t len, uint32_t count, uint64_t data) {
  qaic_manage_msg msg{len, count, data};
  return node.rawIoctl(DRM_IOCTL_QAIC_MANAGE, &msg, "MANAGE");
}

TEST_F(EmuTest, StatusReportsProtocolFiveZero) {
  auto node = openNode();
  auto status = queryStatus(node);
  ASSERT_TRUE(status) << status.message();
  EXPECT_EQ(status->major, QAIC_PROTOCOL_MAJOR);
  EXPECT_LE(status->minor, QAIC_PROTOCOL_MINOR_MAX);
}

TEST_F(EmuTest, MessageOverFourKiBIsEinval) {
  auto node = openNode();
  std::vector<std::byte> big(2 * QAIC_MANAGE_MAX_MSG_LENGTH);
  qaic_manage_trans_status_to_dev status{{QAIC_TRANS_STATUS_FROM_USR, 8}};
  std::memcpy(big.data(), &status, sizeof status);
  auto r = sendRaw(node, QAIC_MANAGE_MAX_MSG_LENGTH + 8, 1, reinterpret_cast<uintptr_t>(big.data()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), EINVAL);
}

TEST_F(EmuTest, EmptyMessageIsEinval) {
  auto node = openNode();
  ManageBuffer buffer;
  auto r = sendRaw(node, 0, 0, reinterpret_cast<uintptr_t>(buffer.data()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), EINVAL);
}

TEST_F(EmuTest, UnreadableMessageIsEfault) {
  auto node = openNode();
  UnreadablePage page;
  EXPECT_TRUE(failsWith(sendRaw(node, 8, 1, page.address()), EFAULT));
}

TEST_F(EmuTest, MalformedTransactionsAreEinval) {
  auto node = openNode();
  ManageBuffer buffer;
  auto send = [&](qaic_manage_trans_hdr hdr, uint32_t len) {
    std::memcpy(buffer.data(), &hdr, sizeof hdr);
    return sendRaw(node, len, 1, reinterpret_cast<uintptr_t>(buffer.data()));
  };
  EXPECT_TRUE(failsWith(send({QAIC_TRANS_STATUS_FROM_USR, 100}, 8), EINVAL));
  EXPECT_TRUE(failsWith(send({QAIC_TRANS_STATUS_FROM_USR, 4}, 8), EINVAL));
  EXPECT_TRUE(failsWith(send({QAIC_TRANS_UNDEFINED, 8}, 8), EINVAL));
  EXPECT_TRUE(failsWith(send({QAIC_TRANS_ACTIVATE_FROM_DEV, 24}, 24), EINVAL))
      << "a device-to-user transaction was accepted from the user";
  EXPECT_TRUE(failsWith(send({QAIC_TRANS_TERMINATE_TO_DEV, 8}, 8), EINVAL)) << "TERMINATE is not a user transaction";

  qaic_manage_trans_activate_to_dev activate{{QAIC_TRANS_ACTIVATE_FROM_USR, 24}, 16, 0, 0, 1};
  std::memcpy(buffer.data(), &activate, sizeof activate);
  EXPECT_TRUE(failsWith(sendRaw(node, 24, 1, reinterpret_cast<uintptr_t>(buffer.data())), EINVAL))
      << "ACTIVATE naming a resource group the file does not hold";
  activate = {{QAIC_TRANS_ACTIVATE_FROM_USR, 24}, 0, 0, 0, 0};
  std::memcpy(buffer.data(), &activate, sizeof activate);
  EXPECT_TRUE(failsWith(sendRaw(node, 24, 1, reinterpret_cast<uintptr_t>(buffer.data())), EINVAL))
      << "ACTIVATE with queue_size 0";
  for (const qaic_manage_trans_deactivate deactivate :
       {qaic_manage_trans_deactivate{{QAIC_TRANS_DEACTIVATE_FROM_USR, 16}, 99, 0},
        qaic_manage_trans_deactivate{{QAIC_TRANS_DEACTIVATE_FROM_USR, 16}, 0, 1}}) {
    std::memcpy(buffer.data(), &deactivate, sizeof deactivate);
    EXPECT_TRUE(failsWith(sendRaw(node, 16, 1, reinterpret_cast<uintptr_t>(buffer.data())), EINVAL))
        << "DEACTIVATE of DBC " << deactivate.dbc_id << " pad " << deactivate.pad;
  }

  // The device is still fine after all of that.
  EXPECT_TRUE(queryStatus(node));
}

TEST_F(EmuTest, CountBeyondTheMessageIsEinval) {
  auto node = openNode();
  ManageMessageBuilder builder;
  builder.status();
  ManageBuffer buffer = builder.take();
  auto r = sendRaw(node, buffer.len, 2, reinterpret_cast<uintptr_t>(buffer.data()));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), EINVAL);
}

TEST_F(EmuTest, ProgramLoadFromUnreadableMemoryIsEfault) {
  auto node = openNode();
  UnreadablePage page;
  auto r = loadProgram(node, std::span(reinterpret_cast<const std::byte*>(page.address()), 4096), 3);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), EFAULT);
}

TEST_F(EmuTest, ActivatingAnUnknownLoadFails) {
  auto node = openNode();
  const uint64_t before = attribute(driver::sysfs::kEmuNspFree);
  EXPECT_TRUE(failsWith(activate(node, 42, 0, 16, 0), EINVAL)) << "activated a DBC without a program";
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), before);
}

TEST_F(EmuTest, CorruptProgramIsRefusedAndNothingIsHeld) {
  auto node = openNode();
  const uint64_t before = attribute(driver::sysfs::kEmuNspFree);
  std::vector<std::byte> corrupt = relu_;
  corrupt[corrupt.size() / 2] ^= std::byte{0x5a};
  auto loaded = loadProgram(node, corrupt, 9);
  EXPECT_TRUE(failsWith(loaded ? activate(node, 9, 0, 16, 0) : Result<uint32_t>(loaded.sysError()), EINVAL))
      << "a container with a bad checksum was activated";
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), before);
  EXPECT_TRUE(queryStatus(node));
}

// Until the emulated device runs a part of a multi-device program, it refuses the container at
// activation, says why in its log, and holds nothing. A foreground emulator: its log is the test's.
TEST(EmuManage, MultiDeviceProgramIsRefusedNamingItsDeviceCount) {
  EmulatorProcess emu(EmulatorOptions{{}, {}, {}, true});
  auto node = DeviceNode::open(emu.root(), 0);
  ASSERT_TRUE(node) << node.message();
  auto nspFree = [&]() -> uint64_t {
    auto value = SysfsDevice(emu.root(), 0).readU64(driver::sysfs::kEmuNspFree);
    return value ? *value : 0;
  };
  const uint64_t before = nspFree();
  ASSERT_GT(before, 0u);
  auto loaded = loadProgram(*node, multiDeviceReluProgram({0, 1, 2}, 1), 11);
  EXPECT_TRUE(failsWith(loaded ? activate(*node, 11, 0, 16, 0) : Result<uint32_t>(loaded.sysError()), EINVAL))
      << "a multi-device container was activated";
  EXPECT_EQ(nspFree(), before);
  EXPECT_NE(emu.log().find("programqpc.bin spans 3 devices; the emulated device runs single-device programs only"),
            std::string::npos)
      << emu.log();
  // The same program on one device still activates.
  ASSERT_TRUE(loadProgram(*node, reluProgram(1), 12));
  EXPECT_TRUE(activate(*node, 12, 0, 16, 0));
}

TEST_F(EmuTest, ProgramIndexOutOfRangeIsRefused) {
  auto node = openNode();
  ASSERT_TRUE(loadProgram(node, relu_, 5));
  EXPECT_TRUE(failsWith(activate(node, 5, 1, 16, 0), EINVAL));
}

}  // namespace
}  // namespace qaic::emu::test
