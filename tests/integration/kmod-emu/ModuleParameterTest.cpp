// SPDX-License-Identifier: Apache-2.0
// sys/module/qaic/parameters/: mainline's five module parameters with their modes and defaults,
// set at start by the configuration and at run time by a write, and honoured by the device:
// WAIT_BO's timeout 0 waits wait_exec_default_timeout_ms, every MANAGE transaction (loads,
// ACTIVATE, DEACTIVATE, STATUS, resource groups) waits at most control_resp_timeout_s for a
// firmware that does not answer (the control_hang fault) while a hung NSP holds none of them, a
// reset whose firmware does not boot (reset_hang) fails after mhi_timeout_ms, and datapath_polling
// makes the channel poll the ring (counted in qaic-emu/datapath/) and tells the host to spin.
#include <sys/stat.h>

#include <cstring>
#include <functional>
#include <thread>

#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "InferenceRig.hpp"
#include "ReluProgram.hpp"

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
  uint64_t counter(const char* name) const { return std::stoull(emu_->attribute(0, name)); }

  // An activated relu (`eventfd`: its interrupt, 0 for none) with its rig attached and its window
  // mapped.
  void activateWithRig(int eventfd = 0) {
    node_ = std::make_unique<DeviceNode>(openNode());
    dbc_ = activateRelu(*node_, 1, 16, eventfd);
    image_ = container::QpcImage::fromBytes(relu_, "relu");
    rig_ = std::make_unique<InferenceRig>(*node_, *image_, 0, dbc_);
    rig_->attachAll();
    auto window = DbcWindow::map(*node_, dbc_);
    ASSERT_TRUE(window) << window.message();
    window_ = std::make_unique<DbcWindow>(std::move(*window));
  }
  // `count` relu inferences one after the other through EXECUTE_BO and WAIT_BO.
  void runSynchronously(uint32_t count) {
    for (uint32_t sequence = 1; sequence <= count; ++sequence) {
      rig_->writeRequestDescriptor(sequence);
      auto submitted = node_->execute(dbc_, rig_->executeEntries());
      ASSERT_TRUE(submitted) << submitted.message();
      auto done = node_->waitBo(rig_->lastHandle(), dbc_, 20000);
      ASSERT_TRUE(done) << done.message();
    }
  }

  // `count` relu inferences one after the other through the mapped ring, as libqaic submits them,
  // each response awaited by spinning on the response tail.
  void runThroughTheRing(uint16_t count) {
    for (uint16_t reqId = 1; reqId <= count; ++reqId) {
      rig_->writeRequestDescriptor(reqId);
      auto submitted = window_->submit(rig_->ringElements(reqId));
      ASSERT_TRUE(submitted) << submitted.message();
      const auto deadline = Clock::now() + 20s;
      while (!window_->responsesPending() && Clock::now() < deadline) window_->spinForResponse(0, 1ms);
      ResponseElement response{};
      ASSERT_EQ(window_->takeResponses(std::span(&response, 1)).value(), 1u);
      EXPECT_EQ(response.reqId, reqId);
    }
  }

  std::unique_ptr<DeviceNode> node_;
  uint32_t dbc_ = 0;
  std::unique_ptr<container::QpcImage> image_;
  std::unique_ptr<InferenceRig> rig_;
  std::unique_ptr<DbcWindow> window_;
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
  EXPECT_TRUE(failsWith(parameters().write("mhi_timeout_ms", "ten"), EINVAL));
  EXPECT_TRUE(failsWith(parameters().write("mhi_timeout_ms", "4294967296"), ERANGE));
  EXPECT_TRUE(failsWith(parameters().write("control_resp_timeout_s", "-1"), EINVAL));
  EXPECT_TRUE(failsWith(parameters().write("datapath_polling", "Y"), EACCES))
      << "a 0400 parameter is chosen at load time";
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
  EXPECT_TRUE(failsWith(queryStatus(node), ETIMEDOUT)) << "the firmware answered while hung";
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
  // The hung request ended with its activation: the DBC is nobody's, and WAIT_BO on it is EPERM
  // at once, as mainline answers.
  EXPECT_EQ(node.waitBo(rig.slot("y").handle, dbc, 1000).error(), EPERM);
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "0"));
  if (second) {
    EXPECT_TRUE(deactivate(node, *second));
  }
}

// ---- mhi_timeout_ms ---------------------------------------------------------------------------

TEST_F(ModuleParameterTest, AResetWhoseFirmwareDoesNotBootFailsAfterMhiTimeout) {
  set("mhi_timeout_ms", "300");
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultResetHang, "1"));
  const auto start = Clock::now();
  auto reset = sysfs().write(driver::sysfs::kFaultReset, "1");
  const auto elapsed = Clock::now() - start;
  ASSERT_FALSE(reset) << "a reset whose firmware never booted succeeded";
  EXPECT_EQ(reset.error(), ETIMEDOUT) << reset.message();
  EXPECT_GE(elapsed, 300ms) << "gave up before mhi_timeout_ms";
  EXPECT_LT(elapsed, 4000ms) << "waited far beyond mhi_timeout_ms (300 ms)";
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuStatus), "Error");
  // A reset whose firmware boots brings the card back.
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultResetHang, "0"));
  auto again = sysfs().write(driver::sysfs::kFaultReset, "1");
  ASSERT_TRUE(again) << again.message();
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuStatus), "Ready");
}

TEST_F(ModuleParameterTest, AResetWaitsUpToMhiTimeoutForItsFirmware) {
  set("mhi_timeout_ms", "20000");
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultResetHang, "1"));
  std::thread boot([&] {
    std::this_thread::sleep_for(300ms);
    (void)sysfs().write(driver::sysfs::kFaultResetHang, "0");
  });
  const auto start = Clock::now();
  auto reset = sysfs().write(driver::sysfs::kFaultReset, "1");
  const auto elapsed = Clock::now() - start;
  boot.join();
  EXPECT_TRUE(reset) << reset.message();
  EXPECT_GE(elapsed, 250ms) << "the reset did not wait for its firmware";
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kEmuStatus), "Ready");
}

// ---- datapath_polling and datapath_poll_interval_us -----------------------------------------

constexpr uint32_t kRequests = 40;

TEST_F(ModuleParameterTest, WithoutPollingTheChannelSleepsOnTheDoorbellAndNeverPolls) {
  activateWithRig();
  EXPECT_FALSE(window_->devicePolls());
  runSynchronously(kRequests);
  EXPECT_EQ(counter(driver::sysfs::kEmuDoorbellPolls), 0u);
  EXPECT_GE(counter(driver::sysfs::kEmuDoorbellSleeps), 1u);
}

class PollingDatapath : public ModuleParameterTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 4, "dbcs": 4}],
               "nodes": {"mode": "0600", "owner": "root", "group": "root"},
               "module_parameters": {"datapath_polling": true, "datapath_poll_interval_us": 50}})";
  }
};

// After each request the channel polls the ring instead of sleeping on the doorbell: a poll
// round per request, and looks of its own while it waits; it sleeps on the doorbell only when the
// test stalls for the 100 ms it keeps polling (rare even on a loaded machine), where without
// polling it sleeps between requests.
TEST_F(PollingDatapath, TheChannelPollsTheRingBetweenRequests) {
  activateWithRig();
  runThroughTheRing(1);  // the channel has run once and polls since
  EXPECT_TRUE(window_->devicePolls());
  EXPECT_EQ(window_->pollInterval(), 50us);
  const uint64_t sleepsBefore = counter(driver::sysfs::kEmuDoorbellSleeps);
  const uint64_t pollsBefore = counter(driver::sysfs::kEmuDoorbellPolls);
  runThroughTheRing(kRequests);
  const uint64_t polls = counter(driver::sysfs::kEmuDoorbellPolls) - pollsBefore;
  const uint64_t sleeps = counter(driver::sysfs::kEmuDoorbellSleeps) - sleepsBefore;
  EXPECT_GE(polls, uint64_t{kRequests}) << sleeps << " sleeps on the doorbell";
  EXPECT_LT(sleeps, kRequests / 2) << polls << " polls";
  // The interval is 0600: the window's register follows a write at the channel's next poll.
  set("datapath_poll_interval_us", "70");
  runSynchronously(2);
  EXPECT_EQ(window_->pollInterval(), 70us);
}

// An idle polling channel stops polling after its poll window and sleeps on the doorbell, so the
// emulator uses no CPU meanwhile, and a request after the pause is found by a wake-up.
TEST_F(PollingDatapath, AnIdleChannelSleepsOnTheDoorbellAgain) {
  activateWithRig();
  runSynchronously(1);
  const uint64_t sleepsBefore = counter(driver::sysfs::kEmuDoorbellSleeps);
  // The channel polls for 100 ms after its last request (docs/emulator.md), then sleeps.
  const auto deadline = Clock::now() + 20s;
  while (counter(driver::sysfs::kEmuDoorbellSleeps) == sleepsBefore && Clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  EXPECT_GT(counter(driver::sysfs::kEmuDoorbellSleeps), sleepsBefore) << "still polling after 20 s";
  // Asleep, it polls no more (the counter stands still), and a doorbell still reaches it.
  const uint64_t pollsAsleep = counter(driver::sysfs::kEmuDoorbellPolls);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(counter(driver::sysfs::kEmuDoorbellPolls), pollsAsleep) << "an idle channel went on polling";
  runSynchronously(1);
}

// A host thread that announces itself polling (kRegHostPolling) finds its response by spinning:
// the device raises no eventfd for it. Unannounced, the same response raises the eventfd.
TEST_F(PollingDatapath, ASpinningHostGetsNoInterrupt) {
  auto interrupt = CompletionEvent::create();
  ASSERT_TRUE(interrupt) << interrupt.message();
  activateWithRig(interrupt->fd());
  for (uint16_t reqId : {uint16_t{1}, uint16_t{2}}) {
    const bool spin = reqId == 1;
    rig_->writeRequestDescriptor(reqId);
    if (spin) window_->announceHostPolling(true);
    ASSERT_TRUE(window_->submit(rig_->ringElements(reqId)));
    const auto deadline = Clock::now() + 20s;
    while (!window_->responsesPending() && Clock::now() < deadline) window_->spinForResponse(0, 1ms);
    ASSERT_TRUE(window_->responsesPending());
    ResponseElement response{};
    ASSERT_EQ(window_->takeResponses(std::span(&response, 1)).value(), 1u);
    EXPECT_EQ(response.reqId, reqId);
    auto fired = interrupt->wait(spin ? 50ms : 5000ms);
    // The device reads the announcement after it publishes the tail, so a host that stopped
    // spinning the moment it saw the response could still be interrupted (a redundant wake-up
    // that libqaic tolerates): the test stays announced until it has looked for the interrupt.
    if (spin) window_->announceHostPolling(false);
    ASSERT_TRUE(fired) << fired.message();
    EXPECT_EQ(*fired, !spin) << (spin ? "the device interrupted a spinning host" : "no interrupt for a sleeping host");
  }
}

// ---- the futex calls through io_uring ----------------------------------------------------------

// Both paths do the data path's job: wake a sleeper on a window word, and a wait that ends by
// wake-up, by a changed word and by timeout. The plain system calls are forced for the second
// pass, as on a kernel before 6.7.
TEST(FutexRingTest, WakeAndWaitOnBothPaths) {
  // This machine's kernel (6.7 or later) has the io_uring futex operations; the probe must find
  // them.
  EXPECT_TRUE(driver::ioUringHasFutexOps()) << "IORING_OP_FUTEX_WAIT/WAKE not found by the probe";
  for (bool forced : {false, true}) {
    driver::forceFutexSyscalls(forced);
    EXPECT_EQ(driver::futexPath(),
              forced || !driver::ioUringHasFutexOps() ? driver::FutexPath::Syscalls : driver::FutexPath::IoUring);
    alignas(4) uint32_t word = 7;
    const uint64_t entersBefore = driver::futexRingEnters();
    // A changed word: returns at once.
    auto start = Clock::now();
    driver::futexWaitShared(&word, 6, 10s);
    EXPECT_LT(Clock::now() - start, 5s);
    // Timeout.
    start = Clock::now();
    driver::futexWaitShared(&word, 7, 50ms);
    EXPECT_GE(Clock::now() - start, 45ms);
    // Wake-up from another thread (it bumps the word first, so no wake is lost).
    std::thread waker([&] {
      std::this_thread::sleep_for(100ms);
      std::atomic_ref<uint32_t>(word).fetch_add(1);
      driver::futexWakeShared(&word);
    });
    start = Clock::now();
    while (std::atomic_ref<uint32_t>(word).load() == 7 && Clock::now() - start < 10s)
      driver::futexWaitShared(&word, 7, 10s);
    waker.join();
    EXPECT_LT(Clock::now() - start, 5s);
    const uint64_t enters = driver::futexRingEnters() - entersBefore;
    if (forced) {
      EXPECT_EQ(enters, 0u) << "the forced fallback went through io_uring";
    } else if (driver::ioUringHasFutexOps()) {
      EXPECT_GE(enters, 3u) << "the waits did not go through io_uring";
    }
  }
  driver::forceFutexSyscalls(false);
}

}  // namespace
}  // namespace qaic::emu::test
