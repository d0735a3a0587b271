// sys/module/qaic/parameters/: mainline's five module parameters with their modes and defaults,
// set at start by the configuration and at run time by a write, and honoured by the device:
// WAIT_BO's timeout 0 waits wait_exec_default_timeout_ms, and every MANAGE transaction (loads,
// ACTIVATE, DEACTIVATE, STATUS, resource groups) waits at most control_resp_timeout_s for a
// firmware that does not answer (the control_hang fault), while a hung NSP holds none of them.
#include <sys/stat.h>

#include <functional>
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

  // Activates the relu program on `node` and puts one EXECUTE_BO request on its DBC with the NSP
  // hung, so that the request stays in flight; the rig's output slot "y" is the BO to wait on.
  struct HungRequest {
    uint32_t dbc = 0;
    std::unique_ptr<container::QpcImage> image;
    std::unique_ptr<InferenceRig> rig;
  };
  HungRequest startHungRequest(const DeviceNode& node) {
    HungRequest hung;
    hung.dbc = activateRelu(node);
    hung.image = container::QpcImage::fromBytes(relu_, "relu");
    hung.rig = std::make_unique<InferenceRig>(node, *hung.image, 0, hung.dbc);
    hung.rig->attachAll();
    hung.rig->writeRequestDescriptor(1);
    EXPECT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "1"));
    auto executed = node.execute(hung.dbc, hung.rig->executeEntries());
    EXPECT_TRUE(executed) << executed.message();
    return hung;
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
  const HungRequest hung = startHungRequest(node);
  const uint32_t dbc = hung.dbc;
  const InferenceRig& rig = *hung.rig;
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

// The elapsed time of `call`, which must fail with `expected`.
template <typename Call>
std::chrono::milliseconds timedFailure(Call call, int expected, const char* what) {
  const auto start = Clock::now();
  auto result = call();
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_FALSE(result) << what << " succeeded while the firmware was silent";
  EXPECT_EQ(result.error(), expected) << what << ": " << result.message();
  return elapsed;
}

// control_resp_timeout_s = 1 with a silent firmware: each kind of control transaction gives up
// after about a second with mainline's ETIMEDOUT (the bound below is far from both the second
// and the 60 s default), and none of them changed anything.
TEST_F(ModuleParameterTest, EveryControlTransactionGivesUpAfterControlRespTimeout) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node, 1);
  const uint64_t nspFree = attribute(driver::sysfs::kEmuNspFree);
  set("control_resp_timeout_s", "1");
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultControlHang, "1"));
  ResourceGroupRequest reserve{};
  reserve.magic = kResourceGroupMagic;
  reserve.version = kResourceGroupVersion;
  reserve.op = static_cast<uint32_t>(ResourceGroupOp::Reserve);
  reserve.resources.numNsp = 1;
  reserve.resources.numVc = 1;
  const std::pair<const char*, std::function<Result<void>()>> calls[] = {
      {"load", [&]() -> Result<void> { return loadProgram(node, relu_, 2); }},
      {"activate",
       [&]() -> Result<void> {
         auto r = activate(node, 1, 0, 16, 0);
         return r ? Result<void>() : Result<void>(r.sysError());
       }},
      {"deactivate", [&]() -> Result<void> { return deactivate(node, dbc); }},
      {"release", [&]() -> Result<void> { return releaseProgram(node, 1); }},
      {"status",
       [&]() -> Result<void> {
         auto r = queryDeviceStatus(node);
         return r ? Result<void>() : Result<void>(r.sysError());
       }},
      {"resource-group",
       [&]() -> Result<void> {
         auto r = resourceGroup(node, reserve);
         return r ? Result<void>() : Result<void>(r.sysError());
       }},
  };
  for (const auto& [what, call] : calls) {
    const auto elapsed = timedFailure(call, ETIMEDOUT, what);
    EXPECT_GE(elapsed, 900ms) << what << " did not wait for the firmware";
    EXPECT_LT(elapsed, 3000ms) << what << " outlived control_resp_timeout_s";
    RecordProperty(std::string(what) + "_ms", std::to_string(elapsed.count()));
  }
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultControlHang, "0"));
  EXPECT_EQ(attribute(driver::sysfs::kEmuNspFree), nspFree) << "a timed-out transaction changed the device";
  EXPECT_TRUE(deactivate(node, dbc)) << "the DBC did not stay active through the timed-out DEACTIVATE";
  EXPECT_TRUE(releaseProgram(node, 1)) << "the load did not survive the timed-out release";
}

// A hung NSP (a program run that never ends, with a request in flight on its DBC) holds no
// control call: another ACTIVATE, a STATUS query and the hung DBC's own DEACTIVATE all answer
// within control_resp_timeout_s (1 s here; the device's semaphore timeout is 2 s).
TEST_F(ModuleParameterTest, AHungNspHoldsNoControlCallPastControlRespTimeout) {
  auto node = openNode();
  set("control_resp_timeout_s", "1");
  const HungRequest hung = startHungRequest(node);
  const uint32_t dbc = hung.dbc;
  const InferenceRig& rig = *hung.rig;
  auto stillHung = node.waitBo(rig.slot("y").handle, dbc, 200);
  ASSERT_EQ(stillHung.error(), ETIMEDOUT) << "the request is not held by the hung NSP: " << stillHung.message();

  auto timed = [](auto call) {
    const auto start = Clock::now();
    auto result = call();
    return std::make_pair(std::move(result), Clock::now() - start);
  };
  auto [second, activateTook] = timed([&] { return activate(node, 1, 0, 16, 0); });
  EXPECT_TRUE(second) << second.message();
  EXPECT_LT(activateTook, 1500ms);
  auto [status, statusTook] = timed([&] { return queryDeviceStatus(node); });
  EXPECT_TRUE(status) << status.message();
  EXPECT_LT(statusTook, 1500ms);
  auto [stopped, deactivateTook] = timed([&] { return deactivate(node, dbc); });
  EXPECT_TRUE(stopped) << stopped.message();
  EXPECT_LT(deactivateTook, 1500ms);
  RecordProperty("deactivate_hung_ms",
                 std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(deactivateTook).count()));
  // The hung request ended with its activation.
  EXPECT_EQ(node.waitBo(rig.slot("y").handle, dbc, 1000).error(), EIO);
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "0"));
  if (second) {
    EXPECT_TRUE(deactivate(node, *second));
  }
}

}  // namespace
}  // namespace qaic::emu::test
