// SPDX-License-Identifier: Apache-2.0
// Which threads run what on the data path. A small request is preprocessed and uploaded by the
// thread that submits it and finished by the completion thread (docs/runtime.md, "One
// inference"); user code (the context's error handler, notify callbacks) still never runs inside
// submit(), whose caller may hold the locks that code takes.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "DeviceAttributes.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

using namespace std::chrono_literals;

struct UserCalls {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::thread::id> errorThreads;
  std::vector<std::thread::id> notifyThreads;
  std::vector<QStatus> notifiedStatus;
};

class DataPathThreadsTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    network_ = compile("relu", reluNetworkIr(16));
    context_ = makeContext(
        nullptr,
        [](QCtxId, QStatus, const char*, void* user) {
          auto* calls = static_cast<UserCalls*>(user);
          std::lock_guard lock(calls->mutex);
          calls->errorThreads.push_back(std::this_thread::get_id());
          calls->changed.notify_all();
        },
        &calls_);
  }

  static void onComplete(const shInferenceHandle& handle, void* user) {
    auto* calls = static_cast<UserCalls*>(user);
    std::lock_guard lock(calls->mutex);
    calls->notifyThreads.push_back(std::this_thread::get_id());
    calls->notifiedStatus.push_back(handle->getStatus());
    calls->changed.notify_all();
  }

  Network network_;
  UserCalls calls_;
};

// kThreads application threads, kRequests synchronous relu inferences each, on one set: every
// result is its own request's.
void expectOwnResultsFromEveryThread(InferenceSet& set) {
  constexpr int kThreads = 3;
  constexpr int kRequests = 50;
  std::vector<int> wrong(kThreads, 0), failed(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> x(16), y(16);
      for (int i = 0; i < kRequests; ++i) {
        for (int k = 0; k < 16; ++k) x[k] = static_cast<float>((t * 1000 + i * 16 + k) % 7) - 3.0f;
        shInferenceHandle h;
        if (set.getAvailable(h, 30'000'000) != QS_SUCCESS) {
          ++failed[t];
          continue;
        }
        h->setBuffers({heapBuffer(x), heapBuffer(y)});
        const uint64_t id = (uint64_t(t) << 32) | uint64_t(i + 1);
        set.submit(h, id);
        shInferenceHandle done;
        if (set.getCompletedId(done, id, 30'000'000) != QS_SUCCESS) ++failed[t];
        if (done) set.putCompleted(done);
        for (int k = 0; k < 16; ++k)
          if (y[k] != std::max(x[k], 0.0f)) ++wrong[t];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failed[t], 0) << "thread " << t;
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
  }
}

TEST_F(DataPathThreadsTest, SmallRequestsCompleteWithTheirOwnResultsFromEveryThread) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 4, 1);
  expectOwnResultsFromEveryThread(*set);
  std::lock_guard lock(calls_.mutex);
  EXPECT_TRUE(calls_.errorThreads.empty());
}

TEST_F(DataPathThreadsTest, FailureFoundInsideSubmitIsReportedOnAPipelineThread) {
  InferenceSetProperties properties;
  properties.programProperties.submitNumRetries = 0;
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1, &properties);
  std::vector<float> x(16, 1.0f), y(16);
  {
    shInferenceHandle h;
    ASSERT_EQ(set->getAvailable(h, 30'000'000), QS_SUCCESS);
    h->setBuffers({heapBuffer(x), heapBuffer(y)});
    set->submit(h, onComplete, &calls_);
    std::unique_lock lock(calls_.mutex);
    ASSERT_TRUE(calls_.changed.wait_for(lock, 30s, [&] { return calls_.notifyThreads.size() == 1; }));
    EXPECT_EQ(calls_.notifiedStatus[0], QS_SUCCESS);
    lock.unlock();
    set->putCompleted(h);
  }
  // The window's status register now says "removed": the upload inside submit() fails.
  writeSysfs(driver::sysfs::kFaultRemove, "1");
  shInferenceHandle h;
  ASSERT_EQ(set->getAvailable(h, 30'000'000), QS_SUCCESS);
  h->setBuffers({heapBuffer(x), heapBuffer(y)});
  const auto caller = std::this_thread::get_id();
  set->submit(h, onComplete, &calls_);
  std::unique_lock lock(calls_.mutex);
  ASSERT_TRUE(calls_.changed.wait_for(
      lock, 30s, [&] { return calls_.notifyThreads.size() == 2 && !calls_.errorThreads.empty(); }));
  EXPECT_EQ(calls_.notifiedStatus[1], QS_DEV_REMOVED) << statusName(calls_.notifiedStatus[1]);
  EXPECT_NE(calls_.notifyThreads[1], caller);
  for (const auto& id : calls_.errorThreads) EXPECT_NE(id, caller);
  lock.unlock();
  set->putCompleted(h);
}

// ---- datapath_polling ------------------------------------------------------------------------

uint64_t datapathCounter(const testing::EmulatorProcess& emu, const char* name) {
  return std::stoull(emu.attribute(0, name));
}

// `count` synchronous relu inferences on one thread, each checked.
void runSynchronously(InferenceSet& set, int count) {
  std::vector<float> x(16), y(16);
  for (int i = 0; i < count; ++i) {
    for (int k = 0; k < 16; ++k) x[k] = static_cast<float>((i * 16 + k) % 5) - 2.0f;
    shInferenceHandle h;
    ASSERT_EQ(set.getAvailable(h, 30'000'000), QS_SUCCESS);
    h->setBuffers({heapBuffer(x), heapBuffer(y)});
    set.submit(h, static_cast<uint64_t>(i + 1));
    shInferenceHandle done;
    ASSERT_EQ(set.getCompletedId(done, static_cast<uint64_t>(i + 1), 30'000'000), QS_SUCCESS);
    set.putCompleted(done);
    for (int k = 0; k < 16; ++k) ASSERT_EQ(y[k], std::max(x[k], 0.0f)) << "inference " << i;
  }
}

constexpr int kSyncRequests = 100;

uint64_t responsesSignalled(const testing::EmulatorProcess& emu) {
  return datapathCounter(emu, driver::sysfs::kEmuResponseInterrupts) +
         datapathCounter(emu, driver::sysfs::kEmuResponseWakes);
}

// Interrupt-driven (the default): every response of a synchronous inference lands in an empty
// FIFO and is signalled, by the response futex (the waiting thread slept) or the eventfd (it
// came first); the channel never polls.
TEST_F(DataPathThreadsTest, WithoutPollingTheDeviceSignalsTheResponses) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  runSynchronously(*set, 1);
  const uint64_t before = responsesSignalled(*emu_);
  runSynchronously(*set, kSyncRequests);
  // The device counts the signal just after it publishes the response, which a waiting thread
  // may find by looking before the signal comes: the last count can trail the last return.
  testing::eventually([&] { return responsesSignalled(*emu_) - before >= uint64_t{kSyncRequests}; }, 10s, 1ms);
  EXPECT_EQ(responsesSignalled(*emu_) - before, uint64_t{kSyncRequests});
  EXPECT_EQ(datapathCounter(*emu_, driver::sysfs::kEmuDoorbellPolls), 0u);
}

class PollingDataPathTest : public DataPathThreadsTest {
 protected:
  std::string emulatorConfig() const override {
    return R"({"module_parameters": {"datapath_polling": true, "datapath_poll_interval_us": 200}})";
  }
};

// With datapath_polling the device finds the requests by polling, and the host polls for the
// responses: it counts as polling while requests are in flight, so the device raises no eventfd
// interrupt for them (a waiting thread that spun past its 200 us and went to sleep is still woken
// through the response futex, how often depends on the machine's load). The device reads the
// announcement after it publishes a response, so a host that took the response and stopped
// polling at once can still draw a redundant interrupt now and then; interrupt-driven, every
// response draws one.
TEST_F(PollingDataPathTest, RequestsAndResponsesAreFoundByPolling) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  runSynchronously(*set, 1);
  const uint64_t interruptsBefore = datapathCounter(*emu_, driver::sysfs::kEmuResponseInterrupts);
  const uint64_t pollsBefore = datapathCounter(*emu_, driver::sysfs::kEmuDoorbellPolls);
  runSynchronously(*set, kSyncRequests);
  EXPECT_LT(datapathCounter(*emu_, driver::sysfs::kEmuResponseInterrupts) - interruptsBefore,
            uint64_t{kSyncRequests / 10})
      << "the device interrupted a polling host";
  EXPECT_GT(datapathCounter(*emu_, driver::sysfs::kEmuDoorbellPolls), pollsBefore)
      << "the device did not poll for the requests";
}

TEST_F(PollingDataPathTest, SmallRequestsCompleteWithTheirOwnResultsFromEveryThread) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 4, 1);
  expectOwnResultsFromEveryThread(*set);
}

}  // namespace
}  // namespace qaic::rt::test
