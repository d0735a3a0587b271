// sys/module/qaic/parameters/: mainline's five module parameters with their modes and defaults,
// set at start by the configuration and at run time by a write, and honoured by the device:
// WAIT_BO's timeout 0 waits wait_exec_default_timeout_ms, and MANAGE waits at most
// control_resp_timeout_s for a firmware that does not answer (the control_hang fault).
#include <sys/stat.h>

#include <thread>

#include "EmuTest.hpp"
#include "InferenceRig.hpp"
#include "ReluProgram.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class ModuleParameterTest : public EmuTest {
 protected:
  SysfsDevice parameters() const { return SysfsDevice(root().path() / "sys/module/qaic/parameters"); }
  void set(const std::string& name, const std::string& value) {
    auto r = parameters().write(name, value);
    ASSERT_TRUE(r) << r.message();
  }
};

TEST_F(ModuleParameterTest, AllFiveArePresentWithMainlineModesAndDefaults) {
  const std::pair<const char*, const char*> defaults[] = {{"datapath_polling", "N"},
                                                          {"wait_exec_default_timeout_ms", "5000"},
                                                          {"control_resp_timeout_s", "60"},
                                                          {"mhi_timeout_ms", "2000"},
                                                          {"datapath_poll_interval_us", "100"}};
  for (const auto& [name, value] : defaults) {
    auto text = parameters().read(name);
    ASSERT_TRUE(text) << text.message();
    EXPECT_EQ(*text, value) << name;
    struct stat st {};
    ASSERT_EQ(::stat((parameters().directory() / name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, std::string(name) == "datapath_polling" ? 0400u : 0600u) << name;
  }
}

TEST_F(ModuleParameterTest, WritesParseLikeTheKernelAndReadOnlyOnesRefuse) {
  set("mhi_timeout_ms", "0x10\n");
  EXPECT_EQ(parameters().read("mhi_timeout_ms").value(), "16");
  auto junk = parameters().write("mhi_timeout_ms", "ten");
  ASSERT_FALSE(junk);
  EXPECT_EQ(junk.error(), EINVAL);
  auto huge = parameters().write("mhi_timeout_ms", "4294967296");
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error(), ERANGE);
  auto negative = parameters().write("control_resp_timeout_s", "-1");
  ASSERT_FALSE(negative);
  EXPECT_EQ(negative.error(), EINVAL);
  auto polling = parameters().write("datapath_polling", "Y");
  ASSERT_FALSE(polling) << "a 0400 parameter is chosen at load time";
  EXPECT_EQ(polling.error(), EACCES);
  EXPECT_EQ(parameters().read("mhi_timeout_ms").value(), "16");
}

class ConfiguredParameters : public ModuleParameterTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 4, "dbcs": 4}],
               "nodes": {"mode": "0600", "owner": "root", "group": "root"},
               "module_parameters": {"datapath_polling": true, "wait_exec_default_timeout_ms": 250,
                                     "datapath_poll_interval_us": 50}})";
  }
};

TEST_F(ConfiguredParameters, TheConfigurationSetsThemAtStart) {
  EXPECT_EQ(parameters().read("datapath_polling").value(), "Y");
  EXPECT_EQ(parameters().read("wait_exec_default_timeout_ms").value(), "250");
  EXPECT_EQ(parameters().read("datapath_poll_interval_us").value(), "50");
}

// The default timeout applies (250 ms configured), not WAIT_BO's historic 5 s: the bound below
// sits far from both so that a loaded machine cannot blur them.
TEST_F(ConfiguredParameters, WaitBoWithTimeoutZeroWaitsTheParameter) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  auto image = container::QpcImage::fromBytes(relu_, "relu");
  InferenceRig rig(node, *image, 0, dbc);
  rig.attachAll();
  rig.writeRequestDescriptor(1);
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "1"));
  ASSERT_TRUE(node.execute(dbc, rig.executeEntries()));
  const auto start = Clock::now();
  auto waited = node.waitBo(rig.slot("y").handle, dbc, 0);
  const auto elapsed = Clock::now() - start;
  EXPECT_EQ(waited.error(), ETIMEDOUT) << waited.message();
  EXPECT_LT(elapsed, 2500ms) << "timeout 0 waited about the old 5 s default";
  set("wait_exec_default_timeout_ms", "0");
  EXPECT_EQ(node.waitBo(rig.slot("y").handle, dbc, 0).error(), ETIMEDOUT) << "0 ms: an immediate answer";
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "0"));
}

TEST_F(ModuleParameterTest, ManageGivesUpAfterControlRespTimeoutWhenTheFirmwareIsSilent) {
  auto node = openNode();
  set("control_resp_timeout_s", "1");
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultControlHang, "1"));
  auto silent = queryStatus(node);
  ASSERT_FALSE(silent) << "the firmware answered while hung";
  EXPECT_EQ(silent.error(), ETIMEDOUT) << silent.message();
  // With the default's patience the answer comes as soon as the firmware is back.
  set("control_resp_timeout_s", "60");
  std::thread revive([&] {
    std::this_thread::sleep_for(300ms);
    (void)sysfs().write(driver::sysfs::kFaultControlHang, "0");
  });
  auto answered = queryStatus(node);
  revive.join();
  EXPECT_TRUE(answered) << answered.message();
}

}  // namespace
}  // namespace qaic::emu::test
