// SPDX-License-Identifier: Apache-2.0
// The ring discipline of DbcWindow against a window file this test plays the device for.
#include "driver/DbcWindow.hpp"

#include <gtest/gtest.h>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "TempDir.hpp"
#include "driver/CompletionEvent.hpp"
#include "driver/ResponsePublisher.hpp"

namespace qaic::driver {
namespace {

constexpr uint32_t kNelem = 4;

class DbcWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    info_.dbc_id = 2;
    info_.generation = 1;
    info_.nelem = kNelem;
    info_.window_size = dbcWindowBytes(kNelem);
    info_.request_offset = requestFifoOffset(kNelem);
    info_.response_offset = responseFifoOffset(kNelem);
    std::strcpy(info_.name, "dbc0-2-1");
    dir_.writeFile(info_.name, std::string(info_.window_size, '\0'));
    auto device = MappedFile::open(dir_.path() / info_.name, info_.window_size);
    ASSERT_TRUE(device) << device.message();
    device_ = std::move(*device);
  }

  Result<DbcWindow> adopt() {
    auto host = MappedFile::open(dir_.path() / info_.name, info_.window_size);
    if (!host) return host.sysError();
    return DbcWindow::adopt(std::move(*host), info_);
  }
  uint32_t& reg(std::size_t offset) { return *reinterpret_cast<uint32_t*>(device_.data() + offset); }
  RequestElement* requests() { return reinterpret_cast<RequestElement*>(device_.data() + info_.request_offset); }
  ResponseElement* responses() { return reinterpret_cast<ResponseElement*>(device_.data() + info_.response_offset); }
  static RequestElement element(uint16_t reqId) {
    RequestElement e{};
    e.reqId = reqId;
    e.cmd = kReqCmdToDevice;
    e.length = 64u * reqId;
    return e;
  }

  testing::TempDir dir_;
  qaic_emu_dbc_info info_{};
  MappedFile device_;
};

TEST_F(DbcWindowTest, SubmitWritesElementsThenTailThenDoorbell) {
  auto window = adopt();
  ASSERT_TRUE(window) << window.message();
  EXPECT_EQ(window->requestSlotsFree(), kNelem - 1);
  const RequestElement batch[] = {element(1), element(2)};
  ASSERT_TRUE(window->submit(batch));
  EXPECT_EQ(reg(kRegRequestTail), 2u);
  EXPECT_EQ(reg(kRegDoorbellFutex), 1u);
  EXPECT_EQ(requests()[0].reqId, 1u);
  EXPECT_EQ(requests()[1].length, 128u);
  EXPECT_EQ(window->requestSlotsFree(), 1u);
}

// Plays the device's channel thread: sleeps on the doorbell futex (up to `timeout`) once it is
// asleep in the kernel, the test rings the doorbell. Returns 0 when woken, else the errno.
class SleepingDevice {
 public:
  SleepingDevice(uint32_t& futexWord, std::chrono::milliseconds timeout) {
    const uint32_t seen = std::atomic_ref<uint32_t>(futexWord).load();
    thread_ = std::thread([this, &futexWord, seen, timeout] {
      tid_.store(static_cast<pid_t>(::syscall(SYS_gettid)));
      const timespec ts{timeout.count() / 1000, (timeout.count() % 1000) * 1'000'000};
      result_ = ::syscall(SYS_futex, &futexWord, FUTEX_WAIT, seen, &ts, nullptr, 0) == 0 ? 0 : errno;
    });
  }
  ~SleepingDevice() {
    if (thread_.joinable()) thread_.join();
  }
  // True once the thread sleeps in the kernel (its state in /proc is S), within 10 s.
  bool asleep() const {
    for (int i = 0; i < 10'000; ++i) {
      const pid_t tid = tid_.load();
      if (tid != 0) {
        std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
        std::string line;
        std::getline(stat, line);
        const auto close = line.rfind(')');
        if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'S') return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  int result() {
    thread_.join();
    return result_;
  }

 private:
  std::atomic<pid_t> tid_{0};
  int result_ = -1;
  std::thread thread_;
};

TEST_F(DbcWindowTest, DoorbellWakesADeviceThatAnnouncedSleeping) {
  auto window = adopt();
  ASSERT_TRUE(window);
  reg(kRegDeviceSleeping) = 1;
  SleepingDevice device(reg(kRegDoorbellFutex), std::chrono::seconds(60));
  ASSERT_TRUE(device.asleep());
  const RequestElement one[] = {element(1)};
  ASSERT_TRUE(window->submit(one));
  EXPECT_EQ(device.result(), 0) << "the doorbell must FUTEX_WAKE a device that may sleep";
}

// Several threads ring while the device sleeps: the first claims the wake-up (clears the flag),
// the others leave it to that one instead of each making the system call.
TEST_F(DbcWindowTest, OneDoorbellClaimsTheWakeUpOfASleepingDevice) {
  auto window = adopt();
  ASSERT_TRUE(window);
  reg(kRegDeviceSleeping) = 1;
  const RequestElement one[] = {element(1)};
  auto claimed = window->enqueue(one);
  ASSERT_TRUE(claimed);
  EXPECT_TRUE(*claimed) << "the first doorbell after the device announced sleeping must wake it";
  EXPECT_EQ(reg(kRegDeviceSleeping), 0u) << "the claim clears the announcement";
  const RequestElement two[] = {element(2)};
  auto second = window->enqueue(two);
  ASSERT_TRUE(second);
  EXPECT_FALSE(*second) << "a second doorbell before the device sleeps again needs no wake-up of its own";
  EXPECT_EQ(reg(kRegRequestTail), 2u);
  EXPECT_EQ(reg(kRegDoorbellFutex), 2u) << "every doorbell still counts on the futex word";
}

TEST_F(DbcWindowTest, DoorbellSkipsTheWakeWhileTheDeviceRuns) {
  auto window = adopt();
  ASSERT_TRUE(window);
  reg(kRegDeviceSleeping) = 0;  // the device is processing (or an NSP drives the ring)
  SleepingDevice device(reg(kRegDoorbellFutex), std::chrono::milliseconds(300));
  ASSERT_TRUE(device.asleep());
  const RequestElement one[] = {element(1)};
  ASSERT_TRUE(window->submit(one));
  EXPECT_EQ(device.result(), ETIMEDOUT) << "no FUTEX_WAKE while the device announced it runs";
  EXPECT_EQ(reg(kRegDoorbellFutex), 1u) << "the doorbell word still counts";
  EXPECT_EQ(reg(kRegRequestTail), 1u);
}

TEST_F(DbcWindowTest, FullRingIsEagainAndWritesNothing) {
  auto window = adopt();
  ASSERT_TRUE(window);
  const RequestElement three[] = {element(1), element(2), element(3)};
  ASSERT_TRUE(window->submit(three));
  const RequestElement one[] = {element(4)};
  auto full = window->submit(one);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error(), EAGAIN);
  EXPECT_EQ(reg(kRegRequestTail), 3u);
  EXPECT_EQ(reg(kRegDoorbellFutex), 1u);

  reg(kRegRequestHead) = 2;  // the device consumed two elements
  ASSERT_TRUE(window->submit(one));
  EXPECT_EQ(reg(kRegRequestTail), 0u) << "the tail wraps";
  EXPECT_EQ(requests()[3].reqId, 4u);
}

TEST_F(DbcWindowTest, TakeResponsesDrainsAndAdvancesHead) {
  auto window = adopt();
  ASSERT_TRUE(window);
  responses()[0] = {7, DBC_COMPLETION_SUCCESS};
  responses()[1] = {8, DBC_COMPLETION_DMA_FAILED};
  reg(kRegResponseTail) = 2;
  ResponseElement out[1];
  auto first = window->takeResponses(out);
  ASSERT_TRUE(first);
  ASSERT_EQ(*first, 1u);
  EXPECT_EQ(out[0].reqId, 7u);
  EXPECT_EQ(reg(kRegResponseHead), 1u);
  auto second = window->takeResponses(out);
  ASSERT_TRUE(second);
  ASSERT_EQ(*second, 1u);
  EXPECT_EQ(out[0].completionCode, DBC_COMPLETION_DMA_FAILED);
  auto none = window->takeResponses(out);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0u);
}

// The interrupt handshake under load: a device thread appends responses with the emulator's rule
// (publishResponse) while the host drains the way libqaic does, to an empty read, and otherwise
// sleeps on the eventfd alone. A response appended while a drain is under way must either be
// found by that drain or interrupt; one that does neither sits in the FIFO with the host asleep.
TEST_F(DbcWindowTest, ADrainInProgressNeverStrandsAResponse) {
  auto window = adopt();
  ASSERT_TRUE(window);
  auto event = CompletionEvent::create();
  ASSERT_TRUE(event) << event.message();
  constexpr uint32_t kResponses = 1000000;
  std::atomic<bool> stop{false};
  std::thread device([&] {
    const ResponseFifoView fifo{device_.data(), device_.data() + info_.response_offset, kNelem};
    for (uint32_t i = 0; i < kResponses && !stop.load(std::memory_order_relaxed); ++i) {
      while (fifo.freeSlots() == 0 && !stop.load(std::memory_order_relaxed)) std::this_thread::yield();
      if (!publishResponse(fifo, ResponseElement{static_cast<uint16_t>(i), 0})) continue;
      const uint64_t one = 1;
      ASSERT_EQ(::write(event->fd(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
    }
  });
  uint32_t received = 0, stranded = 0, outOfOrder = 0;
  ResponseElement batch[1];
  while (received < kResponses) {
    for (;;) {
      auto taken = window->takeResponses(batch);
      ASSERT_TRUE(taken) << taken.message();
      for (std::size_t i = 0; i < *taken; ++i, ++received)
        if (batch[i].reqId != static_cast<uint16_t>(received)) ++outOfOrder;
      if (*taken == 0) break;
    }
    if (received == kResponses) break;
    // Far longer than the device needs for its next append and interrupt, even on a loaded
    // machine: a quiet eventfd with a response waiting means the interrupt was never raised.
    auto signalled = event->wait(std::chrono::seconds(5));
    ASSERT_TRUE(signalled) << signalled.message();
    if (!*signalled && window->responsesPending()) {
      ++stranded;
      break;
    }
  }
  stop.store(true);
  device.join();
  EXPECT_EQ(stranded, 0u) << "a response sat in the FIFO with no interrupt after " << received;
  EXPECT_EQ(received, kResponses);
  EXPECT_EQ(outOfOrder, 0u);
}

TEST_F(DbcWindowTest, DeviceFaultsAreErrorsNotCorruption) {
  auto window = adopt();
  ASSERT_TRUE(window);
  reg(kRegResponseTail) = kNelem;  // out of range
  ResponseElement out[2];
  auto bad = window->takeResponses(out);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), EIO);

  reg(kRegRequestHead) = 99;
  const RequestElement one[] = {element(1)};
  auto badHead = window->submit(one);
  ASSERT_FALSE(badHead);
  EXPECT_EQ(badHead.error(), EIO);
  EXPECT_EQ(window->requestSlotsFree(), 0u);

  reg(kRegRequestHead) = 0;
  reg(kRegDeviceStatus) = static_cast<uint32_t>(DeviceStatus::Removed);
  EXPECT_EQ(window->deviceStatus(), DeviceStatus::Removed);
  auto removed = window->submit(one);
  ASSERT_FALSE(removed);
  EXPECT_EQ(removed.error(), ENODEV);
}

TEST_F(DbcWindowTest, InconsistentInfoIsEproto) {
  auto expectEproto = [](const qaic_emu_dbc_info& info, const char* why) {
    auto valid = DbcWindow::validate(info);
    ASSERT_FALSE(valid) << why;
    EXPECT_EQ(valid.error(), EPROTO) << why;
  };
  EXPECT_TRUE(DbcWindow::validate(info_));
  auto info = info_;
  std::memset(info.name, 'a', sizeof info.name);
  expectEproto(info, "unterminated name");
  info = info_;
  std::strcpy(info.name, "../etc/passwd");
  expectEproto(info, "name with a slash");
  info = info_;
  info.name[0] = '\0';
  expectEproto(info, "empty name");
  info = info_;
  info.nelem = 1;
  expectEproto(info, "nelem below minimum");
  info = info_;
  info.window_size = 4096;
  expectEproto(info, "window too small");
  info = info_;
  info.response_offset = info.window_size - 2;
  expectEproto(info, "response FIFO past the end");
  info = info_;
  info.request_offset = 0;
  expectEproto(info, "request FIFO over the registers");
}

}  // namespace
}  // namespace qaic::driver
