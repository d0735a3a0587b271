// SPDX-License-Identifier: Apache-2.0
// The emulated NSPs compute on host threads: a program compiled for N NSPs (-aic-num-cores) runs
// on N of them, at most the emulator's compute pool (the host's cores, or compute_threads), and
// concurrent activations share that pool without ever computing on more threads than it has.
// The emulator counts the threads its runs hold (qaic-emu/compute_busy, compute_busy_max).
#include <sched.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "DeviceAttributes.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

unsigned cpusOfThisProcess() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<unsigned>(CPU_COUNT(&set));
}

class ComputeThreadsTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    context_ = makeContext();
  }

  unsigned figure(const char* name) const {
    const std::string text = emu_->attribute(0, name);
    EXPECT_FALSE(text.empty()) << name << " unreadable";
    return text.empty() ? 0 : static_cast<unsigned>(std::stoul(text));
  }

  // examples/smallcnn (convolution, pooling, gemm, softmax) for `cores` NSPs.
  Network smallCnn(unsigned cores) {
    return compileFile("smallcnn-" + std::to_string(cores), testing::sourceDir() / "examples/smallcnn/smallcnn.json",
                       {"-aic-num-cores=" + std::to_string(cores)});
  }

  // `count` synchronous inferences of image(seed) on `set`; false on the first failure.
  static bool runImages(InferenceSet& set, const Network& network, int seed, int count,
                        std::vector<std::vector<float>>* outputs) {
    const auto& mappings = network.qpc->getBufferMappings();
    for (int k = 0; k < count; ++k) {
      std::vector<float> image = imageFor(mappings[0].size / sizeof(float), seed + k);
      std::vector<float> probs(mappings[1].size / sizeof(float), -1.0f);
      shInferenceHandle h;
      if (set.getAvailable(h, 10'000'000) != QS_SUCCESS) return false;
      h->setBuffers({heapBuffer(image), heapBuffer(probs)});
      set.submit(h, static_cast<uint64_t>(k));
      shInferenceHandle done;
      if (set.getCompletedId(done, static_cast<uint64_t>(k), 30'000'000) != QS_SUCCESS) return false;
      const bool ok = done->getStatus() == QS_SUCCESS;
      set.putCompleted(done);
      if (!ok) return false;
      if (outputs) outputs->push_back(std::move(probs));
    }
    return true;
  }

  // Float16-exact values (the input's device format is DWHC float16).
  static std::vector<float> imageFor(std::size_t elements, int seed) {
    std::vector<float> image(elements);
    for (std::size_t i = 0; i < elements; ++i)
      image[i] = static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(seed) * 13) % 33) - 16) / 16.0f;
    return image;
  }
};

TEST_F(ComputeThreadsTest, PoolIsTheHostsCores) {
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeThreads), cpusOfThisProcess());
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeBusy), 0u);
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeBusyMax), 0u);
}

TEST_F(ComputeThreadsTest, ProgramForTwoNspsComputesOnTwoThreadsWithTheSameResults) {
  const unsigned pool = figure(driver::sysfs::kEmuComputeThreads);
  const Network one = smallCnn(1), two = smallCnn(2);
  std::vector<std::vector<float>> fromOne, fromTwo;
  {
    auto set = InferenceSet::Factory(context_, one.qpc, 0, 1, 1);
    ASSERT_TRUE(runImages(*set, one, 0, 4, &fromOne));
  }
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeBusyMax), 1u) << "a one-NSP program computed on more threads";
  {
    auto set = InferenceSet::Factory(context_, two.qpc, 0, 1, 1);
    ASSERT_TRUE(runImages(*set, two, 0, 4, &fromTwo));
  }
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeBusyMax), std::min(2u, pool));
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeBusy), 0u);
  // The kernels split work among threads without changing any sum's order here: bit for bit.
  ASSERT_EQ(fromOne.size(), fromTwo.size());
  for (std::size_t k = 0; k < fromOne.size(); ++k) EXPECT_EQ(fromOne[k], fromTwo[k]) << "inference " << k;
  const auto want = expected(two, {imageFor(two.qpc->getBufferMappings()[0].size / sizeof(float), 0)});
  ASSERT_EQ(want[0].size(), fromTwo[0].size());
  for (std::size_t i = 0; i < want[0].size(); ++i)
    EXPECT_NEAR(fromTwo[0][i], want[0][i], 1e-6f + 1e-5f * std::fabs(want[0][i])) << "class " << i;
}

TEST_F(ComputeThreadsTest, ConcurrentActivationsNeverComputeOnMoreThreadsThanThePool) {
  const unsigned pool = figure(driver::sysfs::kEmuComputeThreads);
  const Network two = smallCnn(2);
  constexpr int kActivations = 4, kInferences = 40;
  std::vector<std::shared_ptr<InferenceSet>> sets;
  for (int a = 0; a < kActivations; ++a) sets.push_back(InferenceSet::Factory(context_, two.qpc, 0, 1, 1));
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int a = 0; a < kActivations; ++a)
    clients.emplace_back([&, a] {
      if (!runImages(*sets[static_cast<std::size_t>(a)], two, a, kInferences, nullptr)) ++failures;
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(figure(driver::sysfs::kEmuComputeBusyMax), pool);
  EXPECT_GE(figure(driver::sysfs::kEmuComputeBusyMax), std::min(2u, pool));
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeBusy), 0u);
}

// compute_threads caps the pool: a two-NSP program then computes on one thread, correctly.
class OneComputeThreadTest : public ComputeThreadsTest {
 protected:
  std::string emulatorConfig() const override { return R"({"compute_threads": 1})"; }
};

TEST_F(OneComputeThreadTest, TwoNspProgramsShareTheOneThread) {
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeThreads), 1u);
  const Network two = smallCnn(2);
  std::vector<std::shared_ptr<InferenceSet>> sets;
  for (int a = 0; a < 2; ++a) sets.push_back(InferenceSet::Factory(context_, two.qpc, 0, 1, 1));
  // The host executor's reference results, computed here before the clients start: oneDNN
  // builds primitives behind its own (uninstrumented) locks, which ThreadSanitizer cannot see.
  std::vector<std::vector<float>> wants;
  for (int a = 0; a < 2; ++a)
    wants.push_back(expected(two, {imageFor(two.qpc->getBufferMappings()[0].size / sizeof(float), a)})[0]);
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int a = 0; a < 2; ++a)
    clients.emplace_back([&, a] {
      std::vector<std::vector<float>> outs;
      if (!runImages(*sets[static_cast<std::size_t>(a)], two, a, 10, &outs)) ++failures;
      const std::vector<float>& want = wants[static_cast<std::size_t>(a)];
      for (std::size_t i = 0; i < want.size(); ++i)
        if (outs.empty() || std::fabs(outs[0][i] - want[i]) > 1e-6f + 1e-5f * std::fabs(want[i])) ++failures;
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(figure(driver::sysfs::kEmuComputeBusyMax), 1u);
}

}  // namespace
}  // namespace qaic::rt::test
