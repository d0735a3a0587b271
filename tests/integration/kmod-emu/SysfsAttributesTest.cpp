// SPDX-License-Identifier: Apache-2.0
// The class-directory attributes and their accounting, and discovery under the root.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "DeviceAttributes.hpp"
#include "EmuTest.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;

TEST_F(EmuTest, IdentityAndTotalsMatchTheConfiguredDevice) {
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspTotal), kTestNsps);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
  EXPECT_EQ(attribute(driver::sysfs::kEmuVcTotal), kTestDbcs);
  EXPECT_EQ(attribute(driver::sysfs::kEmuVcFree), kTestDbcs);
  EXPECT_EQ(attribute(driver::sysfs::kPciVendor), 0x17cbu);
  EXPECT_EQ(attribute(driver::sysfs::kPciDevice), 0xa100u);
  EXPECT_EQ(attribute(driver::sysfs::kEmuPid), static_cast<uint64_t>(emu_->pid()));
  auto shm = sysfs().read(driver::sysfs::kEmuShmDir);
  ASSERT_TRUE(shm) << shm.message();
  EXPECT_TRUE(std::filesystem::is_directory(*shm)) << *shm;
  for (uint32_t i = 0; i < kTestDbcs; ++i) {
    auto state = sysfs().read(driver::sysfs::dbcState(i));
    ASSERT_TRUE(state) << state.message();
    EXPECT_EQ(*state, "0");
  }
  EXPECT_TRUE(failsWith(sysfs().read(driver::sysfs::dbcState(kTestDbcs)), ENOENT));
}

TEST_F(EmuTest, AccountingFollowsActivationAndClose) {
  {
    auto node = openNode();
    const uint32_t dbc = activateRelu(node);
    EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps - 1);
    EXPECT_EQ(attribute(driver::sysfs::kEmuVcFree), kTestDbcs - 1);
    EXPECT_EQ(attribute(driver::sysfs::kEmuNetworksActive), 1u);
    auto state = sysfs().read(driver::sysfs::dbcState(dbc));
    ASSERT_TRUE(state);
    EXPECT_EQ(*state, "1");
  }
  // Close is asynchronous behind FUSE's release; give it a bounded moment.
  for (int i = 0; i < 500 && attribute(driver::sysfs::kEmuNspFree) != kTestNsps; ++i) ::usleep(10000);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
  EXPECT_EQ(attribute(driver::sysfs::kEmuVcFree), kTestDbcs);
  EXPECT_EQ(attribute(driver::sysfs::kEmuNetworksActive), 0u);
}

// The firmware's answer to the MANAGE status query carries the same figures qaic-emu/ shows, and
// a real card's tools read them from there (as qaic-util and qaicd do).
TEST_F(EmuTest, StatusQueryReportsTheFiguresOfTheDevice) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  auto report = queryDeviceStatus(node);
  ASSERT_TRUE(report) << report.message();
  EXPECT_EQ(report->status, 0);
  EXPECT_EQ(report->firmwareState, static_cast<uint32_t>(FirmwareState::Ready));
  EXPECT_EQ(report->nspTotal, kTestNsps);
  EXPECT_EQ(report->nspFree, kTestNsps - 1);
  EXPECT_EQ(report->vcTotal, kTestDbcs);
  EXPECT_EQ(report->vcFree, kTestDbcs - 1);
  EXPECT_EQ(report->ddrTotalBytes / (1 << 20), attribute(driver::sysfs::kEmuDramTotal));
  EXPECT_EQ(report->ddrFreeBytes / (1 << 20), attribute(driver::sysfs::kEmuDramFree));
  EXPECT_EQ(report->mcidTotal, attribute(driver::sysfs::kEmuMcidTotal));
  EXPECT_EQ(report->semFree, attribute(driver::sysfs::kEmuSemFree));
  EXPECT_EQ(report->networksLoaded, 1u);
  EXPECT_EQ(report->networksActive, 1u);
  EXPECT_EQ(report->nspFrequencyMhz, attribute(driver::sysfs::kEmuNspFrequencyMhz));
  EXPECT_EQ(std::string(report->fwVersion), sysfs().read(driver::sysfs::kEmuFwVersion).value());
  EXPECT_EQ(std::string(report->sku), sysfs().read(driver::sysfs::kEmuSku).value());
  ASSERT_TRUE(deactivate(node, dbc));
  EXPECT_EQ(queryDeviceStatus(node)->nspFree, kTestNsps);
}

TEST_F(EmuTest, MainlinePciCountersReadZero) {
  for (const char* name : {driver::sysfs::kCeCount, driver::sysfs::kUeCount, driver::sysfs::kUeNonfatalCount})
    EXPECT_EQ(attribute(name), 0u) << name;
}

TEST_F(EmuTest, AttributesAreReadOnlyExceptFaults) {
  EXPECT_TRUE(failsWith(sysfs().write(driver::sysfs::kEmuNspFree, "16"), EACCES)) << "nsp_free was writable";
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), kTestNsps);
  EXPECT_TRUE(failsWith(sysfs().write(driver::sysfs::kFaultNspHang, "maybe"), EINVAL));
}

TEST_F(EmuTest, AnOpenAttributeShowsTheValueNowWhenReadFromTheStart) {
  auto path = root().sysfsPath(0) / driver::sysfs::kFaultNspHang;
  UniqueFd watched(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(watched);
  char text[16] = {};
  ASSERT_EQ(::pread(watched.get(), text, sizeof text, 0), 2);
  EXPECT_EQ(std::string(text, 2), "0\n");
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "1"));
  ASSERT_EQ(::pread(watched.get(), text, sizeof text, 0), 2);
  EXPECT_EQ(std::string(text, 2), "1\n") << "a read from offset 0 renders the attribute again";
  EXPECT_EQ(::pread(watched.get(), text, sizeof text, 2), 0) << "and the rest of it follows that rendering";
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "0"));
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultRemove, "1"));
  EXPECT_EQ(::pread(watched.get(), text, sizeof text, 0), -1);
  EXPECT_EQ(errno, ENODEV);
}

TEST_F(EmuTest, DiscoveryListsTheDevice) { EXPECT_EQ(root().listDevices(), std::vector<unsigned>{0}); }

class TwoDevices : public EmuTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 2, "dbcs": 2}, {"nsps": 3, "dbcs": 2, "numa_node": 1}],
               "nodes": {"mode": "0600", "owner": "root", "group": "root"},
               "compute_threads": 1})";
  }
};

TEST_F(TwoDevices, EachDeviceHasItsOwnNodeAndResources) {
  EXPECT_EQ(root().listDevices(), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(SysfsDevice(root(), 0).readU64(driver::sysfs::kEmuNspTotal).value(), 2u);
  EXPECT_EQ(SysfsDevice(root(), 1).readU64(driver::sysfs::kEmuNspTotal).value(), 3u);
  auto second = DeviceNode::open(root(), 1);
  ASSERT_TRUE(second) << second.message();
  ASSERT_TRUE(loadProgram(*second, relu_, 1));
  ASSERT_TRUE(activate(*second, 1, 0, 16, 0));
  EXPECT_EQ(SysfsDevice(root(), 1).readU64(driver::sysfs::kEmuNspFree).value(), 2u);
  EXPECT_EQ(SysfsDevice(root(), 0).readU64(driver::sysfs::kEmuNspFree).value(), 2u);
}

TEST_F(TwoDevices, NumaNodeIsMinusOneUnlessConfigured) {
  // As on a host without NUMA information: -1 means unknown.
  EXPECT_EQ(SysfsDevice(root(), 0).read(driver::sysfs::kNumaNode).value(), "-1");
  EXPECT_EQ(SysfsDevice(root(), 1).read(driver::sysfs::kNumaNode).value(), "1");
}

TEST_F(TwoDevices, BothCardsArePeersByDefault) {
  EXPECT_EQ(SysfsDevice(root(), 0).read(driver::sysfs::kEmuP2pPeers).value(), "1");
  EXPECT_EQ(SysfsDevice(root(), 1).read(driver::sysfs::kEmuP2pPeers).value(), "0");
  EXPECT_EQ(SysfsDevice(root(), 1).read(driver::sysfs::kEmuDeviceCapabilities).value(), "HybridBoot- MDP+ ECC+");
}

class P2pTopology : public EmuTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 1, "dbcs": 1}, {"nsps": 1, "dbcs": 1}, {"nsps": 1, "dbcs": 1},
                           {"nsps": 1, "dbcs": 1}],
               "p2p_groups": [[0, 2, 3], [1]], "compute_threads": 1})";
  }
};

TEST_F(P2pTopology, EachCardListsItsPeersAndOnlyLinkedCardsReportMdp) {
  EXPECT_EQ(SysfsDevice(root(), 0).read(driver::sysfs::kEmuP2pPeers).value(), "2 3");
  EXPECT_EQ(SysfsDevice(root(), 3).read(driver::sysfs::kEmuP2pPeers).value(), "0 2");
  EXPECT_EQ(SysfsDevice(root(), 1).read(driver::sysfs::kEmuP2pPeers).value(), "");
  EXPECT_EQ(SysfsDevice(root(), 2).read(driver::sysfs::kEmuDeviceCapabilities).value(), "HybridBoot- MDP+ ECC+");
  EXPECT_EQ(SysfsDevice(root(), 1).read(driver::sysfs::kEmuDeviceCapabilities).value(), "HybridBoot- MDP- ECC+");
}

TEST_F(P2pTopology, ACardAddedAtRunTimeHasNoPeers) {
  {
    std::ofstream control(root().path() / "sys/bus/qaic-emu/add_device");
    control << "1\n";
    control.flush();
    ASSERT_TRUE(control.good());
  }
  ASSERT_EQ(root().listDevices().size(), 5u);
  // Configured like device 0, but not behind its switch.
  EXPECT_EQ(SysfsDevice(root(), 4).read(driver::sysfs::kEmuP2pPeers).value(), "");
  EXPECT_EQ(SysfsDevice(root(), 4).read(driver::sysfs::kEmuDeviceCapabilities).value(), "HybridBoot- MDP- ECC+");
  EXPECT_EQ(SysfsDevice(root(), 0).read(driver::sysfs::kEmuP2pPeers).value(), "2 3");
}

}  // namespace
}  // namespace qaic::emu::test
