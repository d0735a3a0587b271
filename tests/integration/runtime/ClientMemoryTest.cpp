// SPDX-License-Identifier: Apache-2.0
// Nothing accumulates in a long-lived libqaic client: this test process keeps one Context and
// creates, uses and destroys InferenceSets over and over, on the whole device and inside a
// partition leased from qaicd; its resident memory stays within 10% of its peak during the first
// tenth and its descriptors are the same (docs/reliability.md).
#include <cstdlib>
#include <iostream>

#include "ProcessUsage.hpp"
#include "RuntimeFixture.hpp"
#include "Sanitizers.hpp"
#include "qaic/Partition.hpp"

namespace qaic::rt::test {
namespace {

constexpr int kElements = 64;

TEST_F(RuntimeTest, InferenceSetsCreatedAndDestroyedLeaveTheClientsMemoryAndDescriptorsFlat) {
  const char* text = std::getenv("QAIC_CLIENT_CYCLES");
  const long cycles = text != nullptr && *text != '\0' ? std::strtol(text, nullptr, 10) : 200;
  ASSERT_GE(cycles, 20);
  const Network network = compile("add", addNetworkIr(kElements));
  startQaicd();
  ::setenv("QAICD_SOCKET", socketPath().c_str(), 1);
  struct Unset {
    ~Unset() { ::unsetenv("QAICD_SOCKET"); }
  } unset;
  auto context = makeContext();
  std::vector<float> a(kElements), b(kElements), c(kElements);
  long firstPeakKb = 0;
  testing::ProcessUsage first, last;
  for (long i = 0; i < cycles; ++i) {
    std::shared_ptr<Partition> lease;
    std::shared_ptr<Context> inPartition;
    QID device = 0;
    if (i % 2 == 1) {
      // Every other set lives in a partition the client leases and gives back.
      lease = Partition::acquire(resourcesFor(*network.qpc, 1), 0, "cycle");
      inPartition = Context::Factory(nullptr, {lease->id()});
      device = lease->id();
    }
    {
      auto set = InferenceSet::Factory(inPartition ? inPartition : context, network.qpc, device, 2, 1);
      ASSERT_TRUE(set) << "cycle " << i;
      for (int k = 0; k < 3; ++k) {
        for (int e = 0; e < kElements; ++e) {
          a[static_cast<std::size_t>(e)] = static_cast<float>(i + e);
          b[static_cast<std::size_t>(e)] = static_cast<float>(k - e);
        }
        shInferenceHandle h;
        ASSERT_EQ(set->getAvailable(h, 5'000'000), QS_SUCCESS);
        h->setBuffers({heapBuffer(a), heapBuffer(b), heapBuffer(c)});
        const uint64_t id = static_cast<uint64_t>(i * 10 + k);
        set->submit(h, id);
        shInferenceHandle done;
        ASSERT_EQ(set->getCompletedId(done, id, 10'000'000), QS_SUCCESS) << (done ? done->getErrorMessage() : "");
        set->putCompleted(done);
        for (int e = 0; e < kElements; ++e)
          ASSERT_EQ(c[static_cast<std::size_t>(e)], static_cast<float>(i + k)) << "cycle " << i << " element " << e;
      }
    }
    inPartition.reset();
    lease.reset();
    const auto usage = testing::sampleUsage(::getpid());
    ASSERT_GT(usage.rssKb, 0);
    if (i < cycles / 10) firstPeakKb = std::max(firstPeakKb, usage.rssKb);
    if (i == cycles / 10) first = usage;
    last = usage;
  }
  std::cout << cycles << " InferenceSets: client RSS peak in the first tenth " << firstPeakKb << " kB, at the end "
            << last.rssKb << " kB; fds " << first.fds << " -> " << last.fds << "\n";
  // Under AddressSanitizer this process's freed memory waits in its quarantine (256 MiB by
  // default, set when the process started) and counts in VmRSS.
  const long slackKb = testing::kAddressSanitizer ? 256 * 1024 : 0;
  EXPECT_LE(last.rssKb * 10, firstPeakKb * 11 + slackKb * 10)
      << "the client's resident memory grew past 110% of its early peak";
  EXPECT_EQ(last.fds, first.fds) << "the client holds more descriptors than after the first tenth";
}

}  // namespace
}  // namespace qaic::rt::test
