// SPDX-License-Identifier: Apache-2.0
// Nothing accumulates in qaicd: across many partition create/release cycles (and connections
// coming and going) its resident memory stays within 10% of its peak during the first tenth
// and its descriptors are the same; the emulator that makes the partitions ends within 10% of
// where it was after the first tenth. QAICD_MEMORY_CYCLES sets the cycles (default 10,000).
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "ProcessUsage.hpp"
#include "QaicdTest.hpp"
#include "Sanitizers.hpp"

namespace qaic::qaicd::test {
namespace {

class QaicdMemoryTest : public QaicdTest {
 protected:
  // Under AddressSanitizer freed memory waits in a quarantine (256 MiB by default) and counts in
  // VmRSS, which would read as growth: qaicd and the emulator start without one here.
  void SetUp() override {
    const char* asan = std::getenv("ASAN_OPTIONS");
    if (asan != nullptr) savedAsanOptions_ = asan;
    ::setenv("ASAN_OPTIONS", ((asan != nullptr ? std::string(asan) + ":" : "") + "quarantine_size_mb=0").c_str(), 1);
    QaicdTest::SetUp();
  }
  void TearDown() override {
    QaicdTest::TearDown();
    if (savedAsanOptions_)
      ::setenv("ASAN_OPTIONS", savedAsanOptions_->c_str(), 1);
    else
      ::unsetenv("ASAN_OPTIONS");
  }
  std::optional<std::string> savedAsanOptions_;
};

TEST_F(QaicdMemoryTest, PartitionCyclesLeaveQaicdsAndTheEmulatorsMemoryAndDescriptorsFlat) {
  const char* text = std::getenv("QAICD_MEMORY_CYCLES");
  const long cycles = text != nullptr && *text != '\0' ? std::strtol(text, nullptr, 10) : 10000;
  ASSERT_GE(cycles, 100);
  const long tenth = cycles / 10;
  testing::ProcessUsage first, last, emuFirst, emuLast;
  long firstPeakKb = 0;
  auto client = std::make_unique<QaicdClient>(connect());
  for (long i = 0; i < cycles; ++i) {
    // A new connection every 50 cycles: connections must not leave anything behind either.
    if (i % 50 == 49) client = std::make_unique<QaicdClient>(connect());
    auto p = client->createPartition(Resources{1 + static_cast<uint32_t>(i % 3), 0, 2, 1, 0}, 0u, "cycle");
    ASSERT_TRUE(p) << "cycle " << i << ": " << p.message();
    if (i % 7 == 0) {
      auto devices = client->devices();
      ASSERT_TRUE(devices) << devices.message();
    }
    ASSERT_TRUE(client->release(p->id)) << "cycle " << i;
    const auto usage = testing::sampleUsage(qaicd_->pid());
    if (i == tenth) emuFirst = testing::sampleUsage(emu_->pid());
    if (i == cycles - 1) emuLast = testing::sampleUsage(emu_->pid());
    ASSERT_GT(usage.rssKb, 0) << "qaicd's VmRSS is unreadable";
    if (i < tenth) firstPeakKb = std::max(firstPeakKb, usage.rssKb);
    // Descriptors are compared halfway between reconnections, when the previous connection's
    // close has long been seen.
    if (i % 50 == 25) {
      if (i >= tenth && first.fds < 0) first = usage;
      last = usage;
    }
  }
  std::cout << cycles << " cycles: qaicd RSS peak in the first tenth " << firstPeakKb << " kB, at the end "
            << last.rssKb << " kB (VmHWM " << last.peakRssKb << " kB); fds " << first.fds << " -> " << last.fds << "\n";
  std::cout << "qaic-emu RSS " << emuFirst.rssKb << " kB after the first tenth, " << emuLast.rssKb
            << " kB at the end\n";
  // The device side of the same cycles: the emulator's tree gives back each partition's files.
  // Under AddressSanitizer its allocator, not glibc's, holds freed chunks in per-thread and
  // size-class caches even without a quarantine (CI measured 96 -> 110 MB); the slack below is
  // still far from what a leaked partition tree costs (17.6 -> 118 MB before FileTree freed it).
  const long emuSlackKb = testing::kAddressSanitizer ? 32 * 1024 : 0;
  EXPECT_LE(emuLast.rssKb * 10, emuFirst.rssKb * 11 + emuSlackKb * 10) << "the emulator kept what the partitions took";
  ASSERT_GT(first.fds, 0);
  EXPECT_LE(last.rssKb * 10, firstPeakKb * 11) << "qaicd's resident memory grew past 110% of its early peak";
  EXPECT_EQ(last.fds, first.fds) << "qaicd holds more descriptors than after the first tenth";
}

}  // namespace
}  // namespace qaic::qaicd::test
