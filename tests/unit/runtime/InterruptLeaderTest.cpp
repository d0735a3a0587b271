// SPDX-License-Identifier: Apache-2.0
// InterruptLeader against a DBC window this test plays the device for: the response futex
// handshake of docs/device-protocol.md section 3, seen from the waiting host thread.
#include "runtime/datapath/InterruptLeader.hpp"

#include <gtest/gtest.h>

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "DeviceClient.hpp"

namespace qaic::rt {
namespace {

using namespace std::chrono_literals;
constexpr uint32_t kNelem = 4;

class InterruptLeaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    info_.dbc_id = 1;
    info_.nelem = kNelem;
    info_.window_size = driver::dbcWindowBytes(kNelem);
    info_.request_offset = driver::requestFifoOffset(kNelem);
    info_.response_offset = driver::responseFifoOffset(kNelem);
    std::strcpy(info_.name, "dbc0-1-1");
    fd_ = ::memfd_create("window", 0);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(::ftruncate(fd_, static_cast<off_t>(info_.window_size)), 0);
    auto device = MappedFile::map(fd_, info_.window_size, 0, "device side");
    ASSERT_TRUE(device) << device.message();
    device_ = std::move(*device);
    auto host = MappedFile::map(fd_, info_.window_size, 0, "host side");
    ASSERT_TRUE(host) << host.message();
    auto window = driver::DbcWindow::adopt(std::move(*host), info_);
    ASSERT_TRUE(window) << window.message();
    window_ = std::make_shared<driver::DbcWindow>(std::move(*window));
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
  }

  std::atomic_ref<uint32_t> reg(std::size_t offset) {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(device_.data() + offset));
  }
  // Waits (bounded) until the host announced a waiting thread.
  bool hostAnnounced() {
    for (auto end = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < end;) {
      if (reg(driver::kRegHostWaiting).load() != 0) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
  // The device's side of a completion: response, tail, word, then the announcement decides.
  void pushResponse(uint16_t reqId) {
    const driver::ResponseFifoView fifo{device_.data(), device_.data() + info_.response_offset, kNelem};
    if (!driver::publishResponse(fifo, driver::ResponseElement{reqId, 0})) return;
    reg(driver::kRegResponseFutex).fetch_add(1, std::memory_order_seq_cst);
    if (reg(driver::kRegHostWaiting).load(std::memory_order_seq_cst) != 0)
      ::syscall(SYS_futex, device_.data() + driver::kRegResponseFutex, FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  }

  qaic_emu_dbc_info info_{};
  int fd_ = -1;
  MappedFile device_;
  std::shared_ptr<driver::DbcWindow> window_;
  InterruptLeader leader_;
};

TEST_F(InterruptLeaderTest, OneThreadLeadsAtATime) {
  ASSERT_TRUE(leader_.tryLead(window_));
  bool second = true;
  std::thread([&] { second = leader_.tryLead(window_); }).join();
  EXPECT_FALSE(second);
  leader_.stopLeading();
  std::thread([&] { second = leader_.tryLead(window_); }).join();
  EXPECT_TRUE(second);
  EXPECT_FALSE(InterruptLeader().tryLead(nullptr));  // an inactive queue cannot be led
}

TEST_F(InterruptLeaderTest, TheDeviceWakesTheLeaderWhichWithdrawsLeavingTheResponseToDrain) {
  ASSERT_TRUE(leader_.tryLead(window_));
  const uint32_t ticket = leader_.ticket();
  std::thread device([&] {
    if (hostAnnounced()) pushResponse(7);
  });
  const auto start = std::chrono::steady_clock::now();
  leader_.await(ticket, InterruptLeader::Clock::now() + 60s, 60s);
  device.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50s) << "the device's wake-up was missed";
  EXPECT_TRUE(window_->responsesPending());  // the caller drains (RequestRing::drain)
  EXPECT_EQ(reg(driver::kRegHostWaiting).load(), 0u);
  EXPECT_NE(reg(driver::kRegResponseFutex).load(), ticket);
  leader_.stopLeading();
}

TEST_F(InterruptLeaderTest, AResponseAlreadyThereEndsTheWaitWithoutSleeping) {
  pushResponse(3);
  ASSERT_TRUE(leader_.tryLead(window_));
  // The word moved before this ticket: only the pending response can end the wait early.
  const auto start = std::chrono::steady_clock::now();
  leader_.await(leader_.ticket(), InterruptLeader::Clock::now() + 60s, 60s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50s) << "slept over a pending response";
  EXPECT_TRUE(window_->responsesPending());
  EXPECT_EQ(reg(driver::kRegHostWaiting).load(), 0u);
  leader_.stopLeading();
}

TEST_F(InterruptLeaderTest, AWakeFromAnotherThreadEndsTheWait) {
  ASSERT_TRUE(leader_.tryLead(window_));
  const uint32_t ticket = leader_.ticket();
  std::thread other([&] {
    if (hostAnnounced()) leader_.wake();
  });
  const auto start = std::chrono::steady_clock::now();
  leader_.await(ticket, InterruptLeader::Clock::now() + 60s, 60s);
  other.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50s) << "wake() did not reach the leader";
  EXPECT_EQ(reg(driver::kRegHostWaiting).load(), 0u);
  leader_.stopLeading();
}

TEST_F(InterruptLeaderTest, WakeWithoutALeaderOrOnTheLeaderTouchesNothing) {
  const uint32_t before = reg(driver::kRegResponseFutex).load();
  leader_.wake();
  ASSERT_TRUE(leader_.tryLead(window_));
  leader_.wake();  // on the leader's own thread: it is awake already
  EXPECT_EQ(reg(driver::kRegResponseFutex).load(), before);
  std::thread([&] { leader_.wake(); }).join();
  EXPECT_NE(reg(driver::kRegResponseFutex).load(), before);
  leader_.stopLeading();
}

// The polling data path (the device says so in the window): the leader announces that it polls
// (so the device signals nothing) and spins on the tail; a response pushed meanwhile ends the
// wait (found spinning, or, on a machine that descheduled the device thread past the spin, by
// the futex wake-up of a leader that went to sleep announced).
TEST_F(InterruptLeaderTest, OnThePollingDataPathTheLeaderSpinsBeforeItSleeps) {
  reg(driver::kRegDatapathPolling).store(1);
  reg(driver::kRegPollIntervalUs).store(1000);  // the longest host spin
  ASSERT_TRUE(leader_.tryLead(window_));
  std::atomic<bool> sawPolling{false};
  std::thread device([&] {
    for (auto end = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < end && !sawPolling;)
      sawPolling = reg(driver::kRegHostPolling).load() != 0;
    pushResponse(5);
  });
  const auto start = std::chrono::steady_clock::now();
  leader_.await(leader_.ticket(), InterruptLeader::Clock::now() + 60s, 60s);
  device.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50s) << "the response was missed";
  EXPECT_TRUE(window_->responsesPending());
  EXPECT_TRUE(sawPolling) << "the leader did not poll on the polling data path";
  EXPECT_EQ(reg(driver::kRegHostPolling).load(), 0u) << "the leader left its polling announced";
  driver::ResponseElement taken[kNelem];
  ASSERT_EQ(window_->takeResponses(taken).value(), 1u);

  // After the spin (1 ms) the leader sleeps, announced, and the device wakes it.
  const uint32_t ticket = leader_.ticket();
  std::thread late([&] {
    if (hostAnnounced()) pushResponse(6);
  });
  const auto lateStart = std::chrono::steady_clock::now();
  leader_.await(ticket, InterruptLeader::Clock::now() + 60s, 60s);
  late.join();
  EXPECT_LT(std::chrono::steady_clock::now() - lateStart, 50s) << "the device's wake-up was missed";
  EXPECT_TRUE(window_->responsesPending());
  EXPECT_EQ(reg(driver::kRegHostWaiting).load(), 0u);
  EXPECT_EQ(reg(driver::kRegHostPolling).load(), 0u);
  leader_.stopLeading();
}

}  // namespace
}  // namespace qaic::rt
