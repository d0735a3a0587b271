// SPDX-License-Identifier: Apache-2.0
// Seed 001's three flow patterns against the real emulator, with outputs checked against the
// host executor, plus the life-cycle misuse errors and the per-stage performance counters.
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

constexpr int kElements = 16;

class InferenceFlowTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    network_ = compile("add", addNetworkIr(kElements));
    context_ = makeContext();
  }

  std::vector<float> ramp(float start) {
    std::vector<float> v(kElements);
    for (int i = 0; i < kElements; ++i) v[static_cast<std::size_t>(i)] = start + 0.5f * static_cast<float>(i) - 3.0f;
    return v;
  }

  // One synchronous inference; returns the output.
  std::vector<float> runOnce(InferenceSet& set, float seed, uint64_t id) {
    auto a = ramp(seed), b = ramp(seed * 2);
    std::vector<float> c(kElements, -1.0f);
    shInferenceHandle h;
    EXPECT_EQ(set.getAvailable(h, 5'000'000), QS_SUCCESS);
    if (!h) return {};
    h->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)});
    set.submit(h, id);
    shInferenceHandle done;
    EXPECT_EQ(set.getCompletedId(done, id, 10'000'000), QS_SUCCESS) << (done ? done->getErrorMessage() : "");
    EXPECT_EQ(done, h);
    if (done) set.putCompleted(done);
    return c;
  }

  Network network_;
};

TEST_F(InferenceFlowTest, SynchronousPollingMatchesTheHostExecutor) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 2, 1);
  for (uint64_t id = 1; id <= 5; ++id) {
    const float seed = static_cast<float>(id);
    const auto out = runOnce(*set, seed, id);
    const auto want = expected(network_, {ramp(seed), ramp(seed * 2)});
    ASSERT_EQ(out.size(), want[0].size());
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_FLOAT_EQ(out[i], want[0][i]) << "element " << i;
  }
}

TEST_F(InferenceFlowTest, MultiThreadedFlowKeepsEveryResultWithItsRequest) {
  InferenceSetProperties properties;
  properties.queueProperties.numThreadsPerQueue = 2;
  properties.name = "mt";
  properties.id = 42;
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 4, 2, &properties);
  EXPECT_EQ(set->getName(), "mt");
  EXPECT_EQ(set->getId(), 42u);
  EXPECT_EQ(set->getSetSize(), 4u);
  std::atomic<int> mismatches{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10; ++k) {
        const uint64_t id = static_cast<uint64_t>(t * 100 + k);
        const float seed = static_cast<float>(id % 17);
        const auto out = runOnce(*set, seed, id);
        const auto a = ramp(seed), b = ramp(seed * 2);
        for (int i = 0; i < kElements; ++i)
          if (out.size() != kElements ||
              out[static_cast<std::size_t>(i)] != a[static_cast<std::size_t>(i)] + b[static_cast<std::size_t>(i)]) {
            ++mismatches;
            break;
          }
        ++done;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(done.load(), 40);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(set->waitForCompletion(1'000'000), QS_SUCCESS);
}

TEST_F(InferenceFlowTest, CallbackFlowDeliversEveryCompletion) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 3, 1);
  struct Slot {
    std::vector<float> a, b, c;
  };
  std::vector<Slot> slots(6);
  std::mutex mutex;
  std::condition_variable cv;
  int completed = 0;
  std::vector<QStatus> statuses;
  auto notify = [&](const shInferenceHandle& handle, void* userData) {
    EXPECT_NE(userData, nullptr);
    std::lock_guard lock(mutex);
    statuses.push_back(handle->getStatus());
    ++completed;
    set->putCompleted(handle);  // from the callback, as an application would
    cv.notify_all();
  };
  for (std::size_t k = 0; k < slots.size(); ++k) {
    slots[k].a = ramp(static_cast<float>(k));
    slots[k].b = ramp(1.0f);
    slots[k].c.assign(kElements, 0.0f);
    shInferenceHandle h;
    ASSERT_EQ(set->getAvailable(h, 10'000'000), QS_SUCCESS);
    h->setInputBuffers({heapBuffer(slots[k].a), heapBuffer(slots[k].b)});
    h->setOutputBuffers({heapBuffer(slots[k].c)});
    set->submit(h, notify, &slots[k]);
  }
  std::unique_lock lock(mutex);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return completed == 6; }));
  for (QStatus s : statuses) EXPECT_EQ(s, QS_SUCCESS);
  for (const auto& slot : slots)
    for (int i = 0; i < kElements; ++i)
      EXPECT_FLOAT_EQ(slot.c[static_cast<std::size_t>(i)],
                      slot.a[static_cast<std::size_t>(i)] + slot.b[static_cast<std::size_t>(i)]);
}

TEST_F(InferenceFlowTest, WaitForCompletionOfOneHandleAndOfTheSet) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 2, 1);
  auto a = ramp(1), b = ramp(2);
  std::vector<float> c(kElements), c2(kElements);
  shInferenceHandle h1, h2;
  ASSERT_EQ(set->getAvailable(h1, 1'000'000), QS_SUCCESS);
  ASSERT_EQ(set->getAvailable(h2, 1'000'000), QS_SUCCESS);
  h1->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)});
  h2->setBuffers({heapBuffer(b), heapBuffer(b), heapBuffer(c2)});
  set->submit(h1, 11);
  set->submit(h2, 12);
  EXPECT_EQ(set->waitForCompletion(h1, 10'000'000), QS_SUCCESS);
  EXPECT_EQ(set->waitForCompletion(10'000'000), QS_SUCCESS);
  EXPECT_EQ(h1->getId(), 11u);
  EXPECT_FLOAT_EQ(c[3], a[3] + b[3]);
  EXPECT_FLOAT_EQ(c2[5], 2 * b[5]);
  // Seed 001: the set-wide wait discards results no one retrieved. h2 is back in the pool (the
  // next getAvailable returns it at once) and its id is gone; h1, returned by
  // waitForCompletion(h1), stays the application's, and getCompletedId still finds it.
  EXPECT_THROW(set->putCompleted(h2), Error) << "h2 was already put back";
  EXPECT_THROW(
      {
        shInferenceHandle none;
        set->getCompletedId(none, 12, 1'000);
      },
      Error);
  shInferenceHandle again;
  ASSERT_EQ(set->getAvailable(again, 1'000), QS_SUCCESS) << "the discarded handle is available";
  EXPECT_EQ(again, h2);
  shInferenceHandle done;
  ASSERT_EQ(set->getCompletedId(done, 11, 1'000'000), QS_SUCCESS);
  EXPECT_EQ(done, h1);
  set->putCompleted(h1);
  set->putCompleted(again);
}

// getCompletedId keeps its meaning next to the set-wide wait: a result it retrieved is the
// application's, a result still in flight when the wait starts is discarded once it completes.
TEST_F(InferenceFlowTest, SetWideWaitDiscardsOnlyUnretrievedResults) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 3, 1);
  auto a = ramp(1), b = ramp(2);
  std::vector<std::vector<float>> c(3, std::vector<float>(kElements));
  std::vector<shInferenceHandle> h(3);
  for (std::size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(set->getAvailable(h[k], 1'000'000), QS_SUCCESS);
    h[k]->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c[k])});
    set->submit(h[k], 20 + k);
  }
  shInferenceHandle first;
  ASSERT_EQ(set->getCompletedId(first, 20, 10'000'000), QS_SUCCESS);
  EXPECT_EQ(set->waitForCompletion(0), QS_SUCCESS);
  for (const auto& out : c) EXPECT_FLOAT_EQ(out[4], a[4] + b[4]) << "every inference ran";
  // Two handles discarded, one retrieved: exactly two are available.
  shInferenceHandle x, y, z;
  ASSERT_EQ(set->getAvailable(x, 1'000), QS_SUCCESS);
  ASSERT_EQ(set->getAvailable(y, 1'000), QS_SUCCESS);
  EXPECT_EQ(set->getAvailable(z, 1'000), QS_TIMEDOUT);
  EXPECT_NE(x, first);
  EXPECT_NE(y, first);
  set->putCompleted(first);
  set->putCompleted(x);
  set->putCompleted(y);
}

TEST_F(InferenceFlowTest, GetAvailableTimesOutWhenEveryHandleIsTaken) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  shInferenceHandle h, other;
  ASSERT_EQ(set->getAvailable(h, 1'000'000), QS_SUCCESS);
  EXPECT_EQ(set->getAvailable(other, 50'000), QS_TIMEDOUT);
  EXPECT_EQ(other, nullptr);
  set->putCompleted(h);
  EXPECT_EQ(set->getAvailable(other, 1'000'000), QS_SUCCESS);
  EXPECT_EQ(other, h);
}

TEST_F(InferenceFlowTest, MisuseIsATypedError) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 2, 1);
  auto otherSet = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  auto a = ramp(1), b = ramp(2);
  std::vector<float> c(kElements);
  shInferenceHandle h;
  ASSERT_EQ(set->getAvailable(h, 1'000'000), QS_SUCCESS);
  h->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)});

  EXPECT_EQ(statusOf([&] { otherSet->submit(h, 1); }), QS_WRONG_SET);
  EXPECT_EQ(statusOf([&] { otherSet->putCompleted(h); }), QS_WRONG_SET);
  EXPECT_EQ(statusOf([&] { h->setBuffers({heapBuffer(a)}); }), QS_INVAL);
  set->submit(h, 7);
  EXPECT_EQ(statusOf([&] { set->submit(h, 8); }), QS_WRONG_STATE);
  EXPECT_EQ(statusOf([&] { h->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)}); }), QS_WRONG_STATE);
  shInferenceHandle done;
  EXPECT_EQ(statusOf([&] { set->getCompletedId(done, 999, 1000); }), QS_INVAL);
  ASSERT_EQ(set->getCompletedId(done, 7, 10'000'000), QS_SUCCESS);
  set->putCompleted(done);
  EXPECT_EQ(statusOf([&] { set->putCompleted(done); }), QS_WRONG_STATE);
  EXPECT_EQ(statusOf([&] { set->submit(h, 9); }), QS_WRONG_STATE) << "submit of a handle not acquired";
  EXPECT_EQ(statusOf([&] { set->submit(nullptr, 9); }), QS_INVAL);
}

TEST_F(InferenceFlowTest, WrongBufferSizeIsRefusedNamingTheBuffer) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  auto a = ramp(1), b = ramp(2);
  b.pop_back();
  std::vector<float> c(kElements);
  shInferenceHandle h;
  ASSERT_EQ(set->getAvailable(h, 1'000'000), QS_SUCCESS);
  h->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)});
  EXPECT_TRUE(refused([&] { set->submit(h, 1); }, QS_BUFFER_SIZE, "'b'")) << "short buffer";
  h->setBufferDims(0, {1, 8});
  b.push_back(0);
  h->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)});
  EXPECT_TRUE(refused([&] { set->submit(h, 1); }, QS_BUFFER_DIMS, "'a'")) << "wrong dims";
  // The handle is still acquired and usable after a refused submit.
  h->setBufferDims(0, {1, kElements});
  set->submit(h, 2);
  shInferenceHandle done;
  EXPECT_EQ(set->getCompletedId(done, 2, 10'000'000), QS_SUCCESS);
}

TEST_F(InferenceFlowTest, DmaBuffersAreReadAndWrittenInPlace) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  const std::size_t bytes = kElements * sizeof(float);
  auto dma = set->allocateDmaBuffer(3 * bytes);
  ASSERT_NE(dma->fd(), -1);
  auto a = ramp(4), b = ramp(-1);
  std::memcpy(dma->data(), a.data(), bytes);
  std::memcpy(dma->data() + bytes, b.data(), bytes);
  auto h = acquireWith(*set, {dma->qbuffer(0, bytes), dma->qbuffer(bytes, bytes), dma->qbuffer(2 * bytes, bytes)});
  auto done = submitAndWait(*set, h, 3);
  const float* c = reinterpret_cast<const float*>(dma->data() + 2 * bytes);
  for (int i = 0; i < kElements; ++i)
    EXPECT_FLOAT_EQ(c[i], a[static_cast<std::size_t>(i)] + b[static_cast<std::size_t>(i)]);
  set->putCompleted(done);

  // A DMA QBuffer that names no live DMA buffer is refused.
  QBuffer bogus = dma->qbuffer(0, bytes);
  bogus.handle = 12345;
  h = acquireWith(*set, {bogus, dma->qbuffer(bytes, bytes), dma->qbuffer(2 * bytes, bytes)});
  EXPECT_THROW(set->submit(h, 4), Error);
}

TEST_F(InferenceFlowTest, DmaBuffersOfOneDirectionEachWorkAcrossSets) {
  // The first set's DBC takes these BOs for in-place transfers; a second set on another DBC must
  // still get correct results (it stages them instead).
  auto first = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  auto second = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  const std::size_t bytes = kElements * sizeof(float);
  auto in = first->allocateDmaBuffer(2 * bytes);
  auto out = first->allocateDmaBuffer(bytes);
  for (int round = 0; round < 2; ++round) {
    for (auto* set : {first.get(), second.get()}) {
      auto a = ramp(static_cast<float>(round) + (set == first.get() ? 0.0f : 10.0f)), b = ramp(2);
      std::memcpy(in->data(), a.data(), bytes);
      std::memcpy(in->data() + bytes, b.data(), bytes);
      std::memset(out->data(), 0, bytes);
      inferOnce(*set, {in->qbuffer(0, bytes), in->qbuffer(bytes, bytes), out->qbuffer()}, 5);
      const float* c = reinterpret_cast<const float*>(out->data());
      for (int i = 0; i < kElements; ++i)
        EXPECT_FLOAT_EQ(c[i], a[static_cast<std::size_t>(i)] + b[static_cast<std::size_t>(i)]) << i;
    }
  }
}

TEST_F(InferenceFlowTest, PerformanceCountersCoverEveryStage) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  runOnce(*set, 1.0f, 1);
  shInferenceHandle h;
  ASSERT_EQ(set->getAvailable(h, 1'000'000), QS_SUCCESS);
  const auto counters = h->getPerformanceCounts();
  for (const char* stage : {"0. queue wait", "1. input preprocessing", "2. input transfer to a device",
                            "3. execution time", "4. output transfer from a device", "5. output postprocessing"})
    EXPECT_TRUE(counters.count(stage)) << stage;
  EXPECT_GT(counters.at("3. execution time").realTimeUs, 0.0) << "the device ran a program";
  // Seed 002's entries: floating-point real and CPU microseconds, execution index 0, a status.
  // A 16-float request runs on the submitting thread: it never waited in a queue.
  EXPECT_EQ(counters.at("0. queue wait").status, PerfCounter::NOT_RUN);
  for (const char* stage : {"1. input preprocessing", "2. input transfer to a device", "3. execution time",
                            "4. output transfer from a device", "5. output postprocessing"}) {
    const PerfCounter& c = counters.at(stage);
    EXPECT_EQ(c.status, PerfCounter::EXECUTED) << stage;
    EXPECT_EQ(c.executionIndex, 0u) << stage;
    EXPECT_GE(c.cpuUs, 0.0) << stage;
    EXPECT_LE(c.cpuUs, c.realTimeUs + 50.0) << stage << ": one thread's CPU time within its wall-clock time";
  }
  EXPECT_EQ(counters.at("3. execution time").cpuUs, 0.0) << "the host only waits while the device runs";
  EXPECT_GT(counters.at("2. input transfer to a device").realTimeUs, 0.0);
  EXPECT_GT(counters.at("4. output transfer from a device").realTimeUs, 0.0);
}

// With the device's program times the doorbell-to-completion span is split: the input transfer
// ends when the program starts, the output transfer starts when it ends. The six stages are
// disjoint spans of one inference, so together they fit in the caller's own measurement of it.
TEST_F(InferenceFlowTest, PerformanceCountersSplitTransfersFromExecution) {
  constexpr int kLarge = 1 << 20;  // 4 MiB per float buffer: queued, and transfers that take time
  auto network = compile("add-large", addNetworkIr(kLarge));
  auto set = InferenceSet::Factory(context_, network.qpc, 0, 1, 1);
  std::vector<float> a(kLarge, 1.0f), b(kLarge, 2.0f), c(kLarge, 0.0f);
  shInferenceHandle h;
  ASSERT_EQ(set->getAvailable(h, 1'000'000), QS_SUCCESS);
  h->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)});
  const auto before = std::chrono::steady_clock::now();
  set->submit(h, 9);
  shInferenceHandle done;
  ASSERT_EQ(set->getCompletedId(done, 9, 20'000'000), QS_SUCCESS) << (done ? done->getErrorMessage() : "");
  const double callerUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - before).count();
  EXPECT_EQ(c[kLarge - 1], 3.0f);
  const auto counters = done->getPerformanceCounts();
  double sum = 0;
  for (const auto& [stage, counter] : counters) {
    EXPECT_EQ(counter.status, PerfCounter::EXECUTED) << stage << " (a queued request runs every stage)";
    EXPECT_GT(counter.realTimeUs, 0.0) << stage;
    sum += counter.realTimeUs;
  }
  EXPECT_LE(sum, callerUs + 1.0) << "stages overlap or double count";
  EXPECT_GT(counters.at("1. input preprocessing").cpuUs, 0.0) << "8 MiB of inputs were copied";
  set->putCompleted(done);
}

// Seed 001: the report comes when numSamples have been collected (without stop()), or on stop()
// with fewer; never when nothing completed.
TEST_F(InferenceFlowTest, ProfilingDeliversAtNumSamplesOrOnStop) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  std::mutex mutex;
  std::vector<ProfilingReport> reports;
  auto profiler = ProfilingHandle::Factory(set, 3, [&](const ProfilingReport& report, void*) {
    std::lock_guard lock(mutex);
    reports.push_back(report);
  });
  auto delivered = [&] {
    std::lock_guard lock(mutex);
    return reports.size();
  };
  profiler->start();
  profiler->stop();
  EXPECT_EQ(delivered(), 0u) << "no callback when nothing completed";

  profiler->start();
  runOnce(*set, 1.0f, 1);
  runOnce(*set, 1.0f, 2);
  EXPECT_EQ(delivered(), 0u) << "two of three samples";
  runOnce(*set, 1.0f, 3);  // the report is delivered before the third handle completes
  ASSERT_EQ(delivered(), 1u) << "the third sample delivers the report without stop()";
  runOnce(*set, 1.0f, 4);  // after the report nothing more is collected
  profiler->stop();        // nothing left to deliver
  ASSERT_EQ(delivered(), 1u);
  EXPECT_EQ(reports[0].samples.size(), 3u);
  EXPECT_EQ(reports[0].samples[0].requestId, 1u);
  EXPECT_EQ(reports[0].samples[2].requestId, 3u);
  EXPECT_EQ(reports[0].setName, set->getName());
  EXPECT_TRUE(reports[0].meanUs.count("3. execution time"));

  profiler->start();  // a new round: stop() with fewer than numSamples delivers what there is
  runOnce(*set, 1.0f, 5);
  profiler->stop();
  ASSERT_EQ(delivered(), 2u);
  ASSERT_EQ(reports[1].samples.size(), 1u);
  EXPECT_EQ(reports[1].samples[0].requestId, 5u);
  EXPECT_THROW(profiler->stop(), Error) << "stopped twice";
}

}  // namespace
}  // namespace qaic::rt::test
