// The class-directory attributes and their accounting, and discovery under the root.
#include <fcntl.h>
#include <unistd.h>

#include "EmuTest.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;

TEST_F(EmuTest, IdentityAndTotalsMatchTheConfiguredDevice) {
  EXPECT_EQ(attribute("nsp_total"), kTestNsps);
  EXPECT_EQ(attribute("nsp_free"), kTestNsps);
  EXPECT_EQ(attribute("vc_total"), kTestDbcs);
  EXPECT_EQ(attribute("vc_free"), kTestDbcs);
  EXPECT_EQ(attribute("device/vendor"), 0x17cbu);
  EXPECT_EQ(attribute("device/device"), 0xa100u);
  EXPECT_EQ(attribute("device/emu_pid"), static_cast<uint64_t>(emu_->pid()));
  auto shm = sysfs().read("device/emu_shm_dir");
  ASSERT_TRUE(shm) << shm.message();
  EXPECT_TRUE(std::filesystem::is_directory(*shm)) << *shm;
  for (uint32_t i = 0; i < kTestDbcs; ++i) {
    auto state = sysfs().read("dbc" + std::to_string(i) + "_state");
    ASSERT_TRUE(state) << state.message();
    EXPECT_EQ(*state, "idle");
  }
  auto beyond = sysfs().read("dbc" + std::to_string(kTestDbcs) + "_state");
  ASSERT_FALSE(beyond);
  EXPECT_EQ(beyond.error(), ENOENT);
}

TEST_F(EmuTest, AccountingFollowsActivationAndClose) {
  {
    auto node = openNode();
    const uint32_t dbc = activateRelu(node);
    EXPECT_EQ(attribute("nsp_free"), kTestNsps - 1);
    EXPECT_EQ(attribute("vc_free"), kTestDbcs - 1);
    EXPECT_EQ(attribute("networks_active"), 1u);
    auto state = sysfs().read("dbc" + std::to_string(dbc) + "_state");
    ASSERT_TRUE(state);
    EXPECT_EQ(*state, "assigned");
  }
  // Close is asynchronous behind FUSE's release; give it a bounded moment.
  for (int i = 0; i < 500 && attribute("nsp_free") != kTestNsps; ++i) ::usleep(10000);
  EXPECT_EQ(attribute("nsp_free"), kTestNsps);
  EXPECT_EQ(attribute("vc_free"), kTestDbcs);
  EXPECT_EQ(attribute("networks_active"), 0u);
}

TEST_F(EmuTest, AttributesAreReadOnlyExceptFaults) {
  auto r = sysfs().write("nsp_free", "16");
  ASSERT_FALSE(r) << "nsp_free was writable";
  EXPECT_EQ(r.error(), EACCES) << r.message();
  EXPECT_EQ(attribute("nsp_free"), kTestNsps);
  auto garbage = sysfs().write("device/fault/nsp_hang", "maybe");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error(), EINVAL);
}

TEST_F(EmuTest, AnOpenAttributeShowsTheValueNowWhenReadFromTheStart) {
  auto path = root().sysfsPath(0) / "device/fault/nsp_hang";
  UniqueFd watched(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(watched);
  char text[16] = {};
  ASSERT_EQ(::pread(watched.get(), text, sizeof text, 0), 2);
  EXPECT_EQ(std::string(text, 2), "0\n");
  ASSERT_TRUE(sysfs().write("device/fault/nsp_hang", "1"));
  ASSERT_EQ(::pread(watched.get(), text, sizeof text, 0), 2);
  EXPECT_EQ(std::string(text, 2), "1\n") << "a read from offset 0 renders the attribute again";
  EXPECT_EQ(::pread(watched.get(), text, sizeof text, 2), 0) << "and the rest of it follows that rendering";
  ASSERT_TRUE(sysfs().write("device/fault/nsp_hang", "0"));
  ASSERT_TRUE(sysfs().write("device/fault/remove", "1"));
  EXPECT_EQ(::pread(watched.get(), text, sizeof text, 0), -1);
  EXPECT_EQ(errno, ENODEV);
}

TEST_F(EmuTest, DiscoveryListsTheDevice) {
  EXPECT_EQ(root().listDevices(), std::vector<unsigned>{0});
}

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
  EXPECT_EQ(SysfsDevice(root(), 0).readU64("nsp_total").value(), 2u);
  EXPECT_EQ(SysfsDevice(root(), 1).readU64("nsp_total").value(), 3u);
  auto second = DeviceNode::open(root(), 1);
  ASSERT_TRUE(second) << second.message();
  ASSERT_TRUE(loadProgram(*second, relu_, 1));
  ASSERT_TRUE(activate(*second, 1, 0, 16, 0));
  EXPECT_EQ(SysfsDevice(root(), 1).readU64("nsp_free").value(), 2u);
  EXPECT_EQ(SysfsDevice(root(), 0).readU64("nsp_free").value(), 2u);
}

TEST_F(TwoDevices, NumaNodeIsMinusOneUnlessConfigured) {
  // As on a host without NUMA information: -1 means unknown.
  EXPECT_EQ(SysfsDevice(root(), 0).read("device/numa_node").value(), "-1");
  EXPECT_EQ(SysfsDevice(root(), 1).read("device/numa_node").value(), "1");
}

}  // namespace
}  // namespace qaic::emu::test
