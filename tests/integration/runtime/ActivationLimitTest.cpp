// SPDX-License-Identifier: Apache-2.0
// A set asking for more activations than its devices hold is refused before it costs a thread or
// memory: the resources come first (ResourceReservation), one MANAGE call per device whatever
// the count, and the threads of every set come from the context's pool, sized by the host's
// cores and not by the activations (docs/runtime.md, "Threads").
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <deque>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "Process.hpp"
#include "ProcessUsage.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The threads of this process, and how many of them are named `name`.
struct Threads {
  int all = 0;
  int named = 0;
};

Threads threadsOfThisProcess(const std::string& name) {
  Threads threads;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return {-1, -1};
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    ++threads.all;
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
    std::string text;
    std::getline(comm, text);
    if (text == name) ++threads.named;
  }
  ::closedir(dir);
  return threads;
}

// No hang: the refusal comes from one call per device. (What it costs is measured by hand and
// in docs/runtime.md; this bound only tells a refusal from the thousands of threads it replaced.)
constexpr auto kRefusalBound = 5s;

class ActivationLimitTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    relu_ = compile("relu", reluNetworkIr(16));
  }

  // `count` activations of relu on device 0 are refused with QS_NO_RESOURCES naming the count
  // and what is free, quickly, leaving this process's threads and memory where they were.
  void expectRefusedCleanly(const std::shared_ptr<Context>& context, uint32_t count) {
    SCOPED_TRACE("numActivations " + std::to_string(count));
    const Threads before = threadsOfThisProcess("qaic-pipeline");
    const long rssBefore = testing::sampleUsage(::getpid()).rssKb;
    const auto start = Clock::now();
    EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, relu_.qpc, 0, 2, count); }, QS_NO_RESOURCES,
                        std::to_string(count) + " activations of "));
    const auto took = Clock::now() - start;
    EXPECT_LT(took, kRefusalBound);
    const Threads after = threadsOfThisProcess("qaic-pipeline");
    EXPECT_EQ(after.all, before.all) << "threads left behind by a refused set";
    EXPECT_EQ(after.named, before.named);
    const long rssAfter = testing::sampleUsage(::getpid()).rssKb;
    EXPECT_LT(rssAfter - rssBefore, 8 * 1024) << "kB of memory kept by a refused set";
  }

  Network relu_;
};

TEST_F(ActivationLimitTest, MoreActivationsThanTheDeviceHoldsAreRefusedAtOnce) {
  auto context = makeContext();
  for (uint32_t count : {17u, 1000u, uint32_t{INT32_MAX}, UINT32_MAX}) expectRefusedCleanly(context, count);
  // The message says what was asked and what the device has.
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, relu_.qpc, 0, 2, 1000); }, QS_NO_RESOURCES,
                      "need 1000 NSPs, 1000 DBCs"));
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, relu_.qpc, 0, 2, 1000); }, QS_NO_RESOURCES,
                      "; the device has 16 NSPs, 16 DBCs"));
  // Nothing was kept: the whole device is still there for a set that fits.
  auto set = InferenceSet::Factory(context, relu_.qpc, 0, 2, 16);
  std::vector<float> x(16, -1.0f), y(16, 5.0f);
  inferOnce(*set, {heapBuffer(x), heapBuffer(y)}, 1);
  EXPECT_EQ(y[3], 0.0f);
}

TEST_F(ActivationLimitTest, AHandleCountBeyondTheLimitIsRefused) {
  auto context = makeContext();
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, relu_.qpc, 0, UINT32_MAX, 2); }, QS_INVAL, "handles"));
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, relu_.qpc, 0, 70000, 1); }, QS_INVAL, "handles"));
  EXPECT_NO_THROW(InferenceSet::Factory(context, relu_.qpc, 0, 2, 16));  // the refusal gave back what it reserved
}

TEST_F(ActivationLimitTest, ASetHoldingEveryNspLeavesTheNextACleanRefusal) {
  auto context = makeContext();
  auto all = InferenceSet::Factory(context, relu_.qpc, 0, 1, 16);
  // In the same context (the same open file) and from another one.
  EXPECT_TRUE(refused([&] { InferenceSet::Factory(context, relu_.qpc, 0, 1, 1); }, QS_NO_RESOURCES,
                      "the device has 0 NSPs, 0 DBCs"));
  auto other = makeContext();
  EXPECT_TRUE(
      refused([&] { InferenceSet::Factory(other, relu_.qpc, 0, 1, 1); }, QS_NO_RESOURCES, "the device has 0 NSPs"));
  // The full set still computes on every activation.
  std::vector<std::vector<float>> x(16, std::vector<float>(16)), y(16, std::vector<float>(16, 9.0f));
  std::vector<shInferenceHandle> handles(16);
  for (uint32_t a = 0; a < 16; ++a) {
    std::fill(x[a].begin(), x[a].end(), static_cast<float>(a) - 8.0f);
    ASSERT_EQ(all->getAvailableOnActivation(a, handles[a], 1'000'000), QS_SUCCESS);
    handles[a]->setBuffers({heapBuffer(x[a]), heapBuffer(y[a])});
    all->submit(handles[a], a);
  }
  ASSERT_EQ(all->waitForCompletion(30'000'000), QS_SUCCESS);
  for (uint32_t a = 0; a < 16; ++a) {
    EXPECT_EQ(handles[a]->getStatus(), QS_SUCCESS) << handles[a]->getErrorMessage();
    EXPECT_EQ(y[a][5], std::max(static_cast<float>(a) - 8.0f, 0.0f)) << "activation " << a;
  }
  all.reset();
  EXPECT_NO_THROW(InferenceSet::Factory(other, relu_.qpc, 0, 1, 16));
}

TEST_F(ActivationLimitTest, FourProcessesAskingTooMuchAtOnce) {
  std::vector<testing::Process> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(testing::Process::fork([this] {
      auto context = Context::Factory(nullptr, {});
      const Threads before = threadsOfThisProcess("qaic-pipeline");
      try {
        InferenceSet::Factory(context, relu_.qpc, 0, 2, 1000);
        return 10;  // not refused
      } catch (const Error& e) {
        if (e.status() != QS_NO_RESOURCES) return 11;
        if (std::string(e.what()).find("1000 activations") == std::string::npos) return 12;
      }
      const Threads after = threadsOfThisProcess("qaic-pipeline");
      if (after.all != before.all || after.named != 0) return 13;
      return 0;
    }));
  }
  for (auto& client : clients) {
    const auto status = client.finish(60s);
    EXPECT_TRUE(status.exited && status.code == 0) << "client exit " << status.shellCode();
  }
  // None of them kept anything on the card.
  auto context = makeContext();
  EXPECT_NO_THROW(InferenceSet::Factory(context, relu_.qpc, 0, 1, 16));
}

// 64 activations on 4 cards: the pipeline threads are the pool's, bounded by the host's cores.
class ManyActivationThreadsTest : public RuntimeTest {
 protected:
  std::string emulatorConfig() const override {
    return R"({"devices":[{"nsps":16,"dbcs":16},{"nsps":16,"dbcs":16},{"nsps":16,"dbcs":16},)"
           R"({"nsps":16,"dbcs":16}]})";
  }
};

TEST_F(ManyActivationThreadsTest, PipelineThreadsFollowTheCoresNotTheActivations) {
  // 32 K floats each way: above the inline limit, so every request goes through the pipelines.
  constexpr int kElements = 32768;
  auto relu = compile("relu-large", reluNetworkIr(kElements));
  auto context = makeContext();
  ASSERT_EQ(context->getDevices().size(), 4u);
  InferenceSetProperties properties;
  properties.programProperties.devMapping = {0, 1, 2, 3};
  auto set = InferenceSet::Factory(context, relu.qpc, 0, 2, 64, &properties);
  ASSERT_EQ(set->getNumActivations(), 64u);

  constexpr int kRequests = 256;
  std::vector<std::vector<float>> x(kRequests, std::vector<float>(kElements)),
      y(kRequests, std::vector<float>(kElements, 7.0f));
  int peakPipelineThreads = 0;
  std::deque<uint64_t> inFlight;  // every handle of the set busy, oldest first
  auto concludeOldest = [&] {
    shInferenceHandle done;
    ASSERT_EQ(set->getCompletedId(done, inFlight.front(), 30'000'000), QS_SUCCESS)
        << (done ? done->getErrorMessage() : std::string("no handle"));
    set->putCompleted(done);
    inFlight.pop_front();
  };
  for (int r = 0; r < kRequests; ++r) {
    for (int k = 0; k < kElements; k += 1024) x[r][k] = static_cast<float>((r + k) % 5) - 2.0f;
    if (inFlight.size() == 128) concludeOldest();
    shInferenceHandle h;
    ASSERT_EQ(set->getAvailable(h, 1'000'000), QS_SUCCESS);
    h->setBuffers({heapBuffer(x[r]), heapBuffer(y[r])});
    set->submit(h, static_cast<uint64_t>(r));
    inFlight.push_back(static_cast<uint64_t>(r));
    peakPipelineThreads = std::max(peakPipelineThreads, threadsOfThisProcess("qaic-pipeline").named);
  }
  while (!inFlight.empty()) concludeOldest();
  peakPipelineThreads = std::max(peakPipelineThreads, threadsOfThisProcess("qaic-pipeline").named);
  for (int r = 0; r < kRequests; ++r)
    for (int k = 0; k < kElements; k += 1024)
      ASSERT_EQ(y[r][k], std::max(x[r][k], 0.0f)) << "request " << r << " element " << k;
  const int cores = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  EXPECT_GT(peakPipelineThreads, 0) << "no request went through a pipeline";
  EXPECT_LE(peakPipelineThreads, cores) << "pipeline threads for 64 activations on " << cores << " cores";
  std::printf("64 activations on 4 devices, %d cores: %d pipeline threads at the peak, %d threads in all\n", cores,
              peakPipelineThreads, threadsOfThisProcess("").all);
}

}  // namespace
}  // namespace qaic::rt::test
