// The class-directory attributes and their accounting, and discovery under the root.
#include <unistd.h>

#include "EmuTest.hpp"
#include "TestProgram.hpp"

namespace qaic::emu::test {
namespace {

using namespace qaic::driver;

TEST_F(EmuTest, IdentityAndTotalsMatchTheConfiguredDevice) {
  EXPECT_EQ(attribute("qaic-emu/nsp_total"), kTestNsps);
  EXPECT_EQ(attribute("qaic-emu/nsp_free"), kTestNsps);
  EXPECT_EQ(attribute("qaic-emu/vc_total"), kTestDbcs);
  EXPECT_EQ(attribute("qaic-emu/vc_free"), kTestDbcs);
  EXPECT_EQ(attribute("device/vendor"), 0x17cbu);
  EXPECT_EQ(attribute("device/device"), 0xa100u);
  EXPECT_EQ(attribute("qaic-emu/pid"), static_cast<uint64_t>(emu_->pid()));
  auto shm = sysfs().read("qaic-emu/shm_dir");
  ASSERT_TRUE(shm) << shm.message();
  EXPECT_TRUE(std::filesystem::is_directory(*shm)) << *shm;
  for (uint32_t i = 0; i < kTestDbcs; ++i) {
    auto state = sysfs().read("dbc" + std::to_string(i) + "_state");
    ASSERT_TRUE(state) << state.message();
    EXPECT_EQ(*state, "0");
  }
  auto beyond = sysfs().read("dbc" + std::to_string(kTestDbcs) + "_state");
  ASSERT_FALSE(beyond);
  EXPECT_EQ(beyond.error(), ENOENT);
}

TEST_F(EmuTest, AccountingFollowsActivationAndClose) {
  {
    auto node = openNode();
    const uint32_t dbc = activateRelu(node);
    EXPECT_EQ(attribute("qaic-emu/nsp_free"), kTestNsps - 1);
    EXPECT_EQ(attribute("qaic-emu/vc_free"), kTestDbcs - 1);
    EXPECT_EQ(attribute("qaic-emu/networks_active"), 1u);
    auto state = sysfs().read("dbc" + std::to_string(dbc) + "_state");
    ASSERT_TRUE(state);
    EXPECT_EQ(*state, "1");
  }
  // Close is asynchronous behind FUSE's release; give it a bounded moment.
  for (int i = 0; i < 500 && attribute("qaic-emu/nsp_free") != kTestNsps; ++i) ::usleep(10000);
  EXPECT_EQ(attribute("qaic-emu/nsp_free"), kTestNsps);
  EXPECT_EQ(attribute("qaic-emu/vc_free"), kTestDbcs);
  EXPECT_EQ(attribute("qaic-emu/networks_active"), 0u);
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
  EXPECT_EQ(report->ddrTotalBytes / (1 << 20), attribute("qaic-emu/dram_total"));
  EXPECT_EQ(report->ddrFreeBytes / (1 << 20), attribute("qaic-emu/dram_free"));
  EXPECT_EQ(report->mcidTotal, attribute("qaic-emu/mcid_total"));
  EXPECT_EQ(report->semFree, attribute("qaic-emu/sem_free"));
  EXPECT_EQ(report->networksLoaded, 1u);
  EXPECT_EQ(report->networksActive, 1u);
  EXPECT_EQ(report->nspFrequencyMhz, attribute("qaic-emu/nsp_frequency_mhz"));
  EXPECT_EQ(std::string(report->fwVersion), sysfs().read("qaic-emu/fw_version").value());
  EXPECT_EQ(std::string(report->sku), sysfs().read("qaic-emu/sku").value());
  ASSERT_TRUE(deactivate(node, dbc));
  EXPECT_EQ(queryDeviceStatus(node)->nspFree, kTestNsps);
}

TEST_F(EmuTest, MainlinePciCountersReadZero) {
  for (const char* name : {"device/ce_count", "device/ue_count", "device/ue_nonfatal_count"})
    EXPECT_EQ(attribute(name), 0u) << name;
}

TEST_F(EmuTest, AttributesAreReadOnlyExceptFaults) {
  auto r = sysfs().write("qaic-emu/nsp_free", "16");
  ASSERT_FALSE(r) << "nsp_free was writable";
  EXPECT_EQ(r.error(), EACCES) << r.message();
  EXPECT_EQ(attribute("qaic-emu/nsp_free"), kTestNsps);
  auto garbage = sysfs().write("qaic-emu/fault/nsp_hang", "maybe");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error(), EINVAL);
}

TEST_F(EmuTest, DiscoveryListsTheDevice) {
  EXPECT_EQ(root().listDevices(), std::vector<unsigned>{0});
}

class TwoDevices : public EmuTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 2, "dbcs": 2}, {"nsps": 3, "dbcs": 2}],
               "nodes": {"mode": "0600", "owner": "root", "group": "root"},
               "compute_threads": 1})";
  }
};

TEST_F(TwoDevices, EachDeviceHasItsOwnNodeAndResources) {
  EXPECT_EQ(root().listDevices(), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(SysfsDevice(root(), 0).readU64("qaic-emu/nsp_total").value(), 2u);
  EXPECT_EQ(SysfsDevice(root(), 1).readU64("qaic-emu/nsp_total").value(), 3u);
  auto second = DeviceNode::open(root(), 1);
  ASSERT_TRUE(second) << second.message();
  ASSERT_TRUE(loadProgram(*second, relu_, 1));
  ASSERT_TRUE(activate(*second, 1, 0, 16, 0));
  EXPECT_EQ(SysfsDevice(root(), 1).readU64("qaic-emu/nsp_free").value(), 2u);
  EXPECT_EQ(SysfsDevice(root(), 0).readU64("qaic-emu/nsp_free").value(), 2u);
}

}  // namespace
}  // namespace qaic::emu::test
