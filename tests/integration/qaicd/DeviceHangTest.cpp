// SPDX-License-Identifier: Apache-2.0
// qaicd with one of two devices hung inside a control call (the emulator's control_hang fault
// holds every MANAGE on it): the other device and every client are served meanwhile, a request
// to the hung device is refused after qaicd's bound, and what the device does after the
// refusal is undone. Also the emulator itself going away: qaicd drops its devices and serves on.
#include <algorithm>
#include <future>

#include "Process.hpp"

#include "DeviceAttributes.hpp"
#include "QaicdTest.hpp"

namespace qaic::qaicd::test {
namespace {

using namespace std::chrono_literals;

class DeviceHangTest : public QaicdTest {
 protected:
  std::string emulatorConfig() const override {
    // A hung firmware holds a MANAGE for control_resp_timeout_s: longer than any test here.
    return R"({"devices": [{"nsps": 8, "dbcs": 8}, {"nsps": 8, "dbcs": 8}], "semaphore_timeout_ms": 2000,
               "compute_threads": 1, "module_parameters": {"control_resp_timeout_s": 120}})";
  }
  std::vector<std::string> qaicdArgs() const override { return {"--device-timeout-ms", deviceTimeoutMs()}; }
  virtual std::string deviceTimeoutMs() const { return "60000"; }

  // qaicd serves while it still opens its devices; the tests hang a device qaicd has found (one
  // hung while being opened is not listed until it answers).
  void SetUp() override {
    QaicdTest::SetUp();
    auto client = connect();
    ASSERT_TRUE(listedWithin10s(client, 2, 0, "Ready") && listedWithin10s(client, 2, 1, "Ready"))
        << "qaicd never listed both devices Ready";
  }

  // True once qaicd lists `count` devices, device `id` with `status` (polled for up to 10 s).
  static bool listedWithin10s(QaicdClient& client, std::size_t count, uint32_t id, const std::string& status) {
    return testing::eventually(
        [&] {
          auto d = client.devices();
          return d && d->size() == count &&
                 std::any_of(d->begin(), d->end(), [&](const auto& e) { return e.id == id && e.status == status; });
        },
        10s);
  }

  void hang(unsigned device, bool on) const {
    ASSERT_TRUE(emu_->setAttribute(device, driver::sysfs::kFaultControlHang, on ? "1" : "0"));
  }
  // A create on `device` from its own connection, answered on another thread.
  std::future<Result<PartitionInfo>> createAsync(unsigned device) const {
    return std::async(std::launch::async, [this, device]() -> Result<PartitionInfo> {
      auto client = QaicdClient::connect(socketPath(), std::chrono::seconds(120));
      if (!client) return client.sysError();
      auto p = client->createPartition(Resources{2, 0, 0, 1, 0}, device, "hung");
      // The lease ends with the connection; keep it until the answer is checked.
      if (p) (void)client->release(p->id);
      return p;
    });
  }
};

TEST_F(DeviceHangTest, AHungDeviceHoldsUpNothingButItsOwnRequests) {
  hang(0, true);
  // The create reaches device 0's thread and stays in the kernel there (below, device 0 is
  // listed Unresponsive only because of it).
  auto pending = createAsync(0);

  auto client = connect();
  for (int round = 0; round < 3; ++round) {
    auto hello = client.hello();
    ASSERT_TRUE(hello) << hello.message();
    auto p = client.createPartition(Resources{3, 0, 0, 1, 0}, 1u, "beside");
    ASSERT_TRUE(p) << p.message();
    EXPECT_EQ(p->device, 1u);
    EXPECT_EQ(attribute(1, driver::sysfs::kEmuNspFree), kDeviceNsps - 3);
    auto devices = client.devices();
    ASSERT_TRUE(devices) << devices.message();
    ASSERT_EQ(devices->size(), 2u);
    EXPECT_EQ((*devices)[1].status, "Ready");
    EXPECT_EQ((*devices)[1].free.numNsp, kDeviceNsps - 3);
    EXPECT_EQ((*devices)[1].partitions, std::vector<uint32_t>{p->id});
    auto listed = client.list();
    ASSERT_TRUE(listed) << listed.message();
    EXPECT_EQ(listed->size(), 1u);
    ASSERT_TRUE(client.release(p->id));
    EXPECT_EQ(attribute(1, driver::sysfs::kEmuNspFree), kDeviceNsps);
  }
  // Without a device named, a create passes over the hung device once it has held its call for
  // longer than a healthy one takes.
  ASSERT_TRUE(listedWithin10s(client, 2, 0, "Unresponsive")) << "device 0 is never listed Unresponsive";
  auto anywhere = client.createPartition(Resources{1, 0, 0, 1, 0});
  ASSERT_TRUE(anywhere) << anywhere.message();
  EXPECT_EQ(anywhere->device, 1u);
  ASSERT_TRUE(client.release(anywhere->id));

  // All of that happened while device 0 was still in its call: the first create is unanswered.
  EXPECT_EQ(pending.wait_for(0s), std::future_status::timeout) << "the create on the hung device was answered";
  EXPECT_EQ(emu_->attribute(0, driver::sysfs::kFaultControlHang), "1");
  hang(0, false);
  auto late = pending.get();
  ASSERT_TRUE(late) << late.message();
  EXPECT_EQ(late->device, 0u);
  ASSERT_TRUE(testing::eventually([&] { return deviceWhole(0); }, 5s));
  auto devices = client.devices();
  ASSERT_TRUE(devices) << devices.message();
  EXPECT_EQ((*devices)[0].status, "Ready");
}

class DeviceTimeoutTest : public DeviceHangTest {
 protected:
  std::string deviceTimeoutMs() const override { return "300"; }
};

TEST_F(DeviceTimeoutTest, ARequestToAHungDeviceIsRefusedAfterTheBoundAndItsLateResultUndone) {
  hang(0, true);
  auto client = connect();
  auto first = client.createPartition(Resources{2, 0, 0, 1, 0}, 0u);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error(), ETIMEDOUT) << first.message();
  EXPECT_NE(first.message().find("device 0: not answering"), std::string::npos) << first.message();
  // Once the device's call has run past the bound (it is listed Unresponsive then), a request
  // is refused at once, not queued behind the hung call.
  ASSERT_TRUE(testing::eventually(
      [&] {
        auto d = client.devices();
        return d && !d->empty() && (*d)[0].status == "Unresponsive";
      },
      10s));
  auto second = client.createPartition(Resources{2, 0, 0, 1, 0}, 0u);
  EXPECT_EQ(second.error(), ETIMEDOUT) << second.message();
  EXPECT_NE(second.message().find("a device call has been running for"), std::string::npos) << second.message();
  // The other device serves on.
  auto beside = client.createPartition(Resources{2, 0, 0, 1, 0}, 1u);
  ASSERT_TRUE(beside) << beside.message();
  ASSERT_TRUE(client.release(beside->id));

  // The firmware answers at last: the partition made for the refused request is removed again.
  hang(0, false);
  // The device whole again is not enough: it is whole until the held create goes through, too.
  ASSERT_TRUE(testing::eventually(
      [&] {
        return qaicd_->log().find("was created after its request timed out: removing it") != std::string::npos &&
               deviceWhole(0);
      },
      5s))
      << "the partition created after its request timed out is still on device 0";
  auto after = client.createPartition(Resources{2, 0, 0, 1, 0}, 0u);
  ASSERT_TRUE(after) << after.message();
  EXPECT_EQ(after->device, 0u);
}

// Device 0 hung before qaicd starts: its first status query never answers, so it is not listed.
// A create on it says it is being opened, then, past the bound, that it is not answering;
// never "no such device". Once it answers it is listed and serves.
class DeviceOpeningHangTest : public DeviceTimeoutTest {
 protected:
  void beforeQaicd() override { hang(0, true); }
  void SetUp() override { QaicdTest::SetUp(); }
};

TEST_F(DeviceOpeningHangTest, ADeviceHungWhileBeingOpenedIsNotAnsweringNotMissing) {
  auto client = connect();
  ASSERT_TRUE(listedWithin10s(client, 1, 1, "Ready")) << "qaicd never listed device 1 alone";
  std::vector<std::string> answers;
  bool created = false;
  ASSERT_TRUE(testing::eventually(
      [&] {
        auto p = client.createPartition(Resources{2, 0, 0, 1, 0}, 0u);
        created = created || p;
        if (p) return true;
        answers.push_back(std::to_string(p.error()) + " " + p.message());
        return p.error() == ETIMEDOUT;
      },
      10s));
  ASSERT_FALSE(created) << "a create on the hung device succeeded";
  for (const std::string& answer : answers) {
    const auto says = [&answer](int errnum, const std::string& text) {
      return answer.rfind(std::to_string(errnum) + " ", 0) == 0 && answer.find(text) != std::string::npos;
    };
    const bool opening = says(EAGAIN, "device 0: still being opened");
    const bool hung = says(ETIMEDOUT, "device 0: not answering");
    EXPECT_TRUE(opening || hung) << answer;
  }
  EXPECT_NE(answers.back().find("not listed yet"), std::string::npos) << answers.back();

  hang(0, false);
  ASSERT_TRUE(listedWithin10s(client, 2, 0, "Ready")) << "device 0 was not listed once it answered";
  auto p = client.createPartition(Resources{2, 0, 0, 1, 0}, 0u);
  ASSERT_TRUE(p) << p.message();
  EXPECT_EQ(p->device, 0u);
}

TEST_F(DeviceHangTest, AKilledEmulatorsDevicesAreDroppedAndQaicdServesOn) {
  auto client = connect();
  auto p = client.createPartition(Resources{2, 0, 0, 1, 0}, 0u);
  ASSERT_TRUE(p) << p.message();
  emu_->kill();
  // A killed emulator leaves its mount stale (ENOTCONN) and EmulatorProcess leaves it so for
  // the recovery tests; this test takes it down itself, whatever its outcome.
  struct Unmount {
    std::string root;
    std::filesystem::path log;
    ~Unmount() { testing::runProgram({"/usr/bin/fusermount3", "-u", "-z", root}, log, 10s); }
  } unmount{rootPath(), work() / "fusermount.log"};
  ASSERT_TRUE(testing::eventually(
      [&] {
        auto d = client.devices();
        auto l = client.list();
        return d && l && d->empty() && l->empty();
      },
      10s))
      << "the dead emulator's devices or partition are still listed";
  EXPECT_EQ(::kill(qaicd_->pid(), 0), 0) << "qaicd died";
  auto none = client.createPartition(Resources{1, 0, 0, 1, 0});
  EXPECT_EQ(none.error(), ENODEV) << none.message();
  EXPECT_NE(qaicd_->log().find("device 0 went away: dropping partition " + std::to_string(p->id)), std::string::npos);
  auto hello = client.hello();
  EXPECT_TRUE(hello) << hello.message();
}

}  // namespace
}  // namespace qaic::qaicd::test
