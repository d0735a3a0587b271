// SPDX-License-Identifier: Apache-2.0
// A BO's memory returns when its last holder lets go, measured on the real processes: a client
// process creates, fills and closes large BOs (GEM_CLOSE), directly or after exporting them,
// many times over, and the emulator's resident memory comes back to where it started while a
// live BO visibly adds its size. Nothing is left in the shared-memory directory either.
#include <drm.h>
#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "Process.hpp"
#include "ProcessUsage.hpp"
#include "Sanitizers.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

constexpr std::size_t kBoBytes = 32u << 20;
constexpr int kCycles = 24;  // 768 MiB created and closed in all
// What the emulator may keep between the two samples: allocator caches and the FUSE workers'
// buffers. Far below one BO, so a BO that stayed would fail the test.
constexpr long kSlackKb = qaic::testing::kUnderSanitizer ? 16384 : 8192;

int gemClose(const DeviceNode& node, uint32_t handle) {
  drm_gem_close c{handle, 0};
  auto r = node.rawIoctl(DRM_IOCTL_GEM_CLOSE, &c, "GEM_CLOSE");
  return r ? 0 : r.error();
}

bool await(int fd) {
  pollfd p{fd, POLLIN, 0};
  char c;
  return ::poll(&p, 1, 30'000) == 1 && ::read(fd, &c, 1) == 1;
}

TEST_F(EmuTest, BoMemoryReturnsToTheEmulatorWhenItsLastHolderLetsGo) {
  int toParent[2], toChild[2];
  ASSERT_EQ(::pipe2(toParent, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(toChild, O_CLOEXEC), 0);
  const std::filesystem::path shm = sysfs().read(driver::sysfs::kEmuShmDir).value();
  long baselineKb = -1, liveKb = -1, afterKb = -1;
  ExitStatus client;
  std::thread clientThread([&] {
    client = runInChild(
        [&] {
          auto node = DeviceNode::open(root(), 0);
          if (!node) return 10;
          auto cycle = [&](bool exportFirst) {
            auto bo = BufferObject::create(*node, kBoBytes);
            if (!bo) return false;
            std::memset(bo->data(), 0x5a, bo->size());
            UniqueFd exported;
            if (exportFirst) exported.reset(exportBo(*node, bo->handle()));
            if (exportFirst && !exported) return false;
            return gemClose(*node, bo->handle()) == 0;  // the export and the mapping go next
          };
          // One cycle first, so that the baseline has every cache the cycles use.
          if (!cycle(false)) return 11;
          if (::write(toParent[1], "b", 1) != 1 || !await(toChild[0])) return 12;
          auto live = BufferObject::create(*node, kBoBytes);
          if (!live) return 13;
          std::memset(live->data(), 0x11, live->size());
          if (::write(toParent[1], "l", 1) != 1 || !await(toChild[0])) return 14;
          if (gemClose(*node, live->handle()) != 0) return 15;
          for (int i = 0; i < kCycles; ++i)
            if (!cycle(i % 2 == 1)) return 16;
          if (::write(toParent[1], "a", 1) != 1 || !await(toChild[0])) return 17;
          return 0;
        },
        120s);
  });
  auto sampleWhen = [&](long& kb) {
    if (!await(toParent[0])) return false;
    kb = testing::sampleUsage(emu_->pid()).rssKb;
    return ::write(toChild[1], "k", 1) == 1;
  };
  const bool sampled = sampleWhen(baselineKb) && sampleWhen(liveKb) && sampleWhen(afterKb);
  clientThread.join();
  for (int fd : {toParent[0], toParent[1], toChild[0], toChild[1]}) ::close(fd);
  ASSERT_TRUE(client.exited);
  ASSERT_EQ(client.code, 0) << "10 open, 11 warm-up, 12 pipe, 13 live BO, 14 pipe, 15 close, 16 cycle, 17 pipe";
  ASSERT_TRUE(sampled);
  std::printf(
      "emulator VmRSS: %ld kB at start, %ld kB with a live %zu MiB BO, %ld kB after %d more "
      "create/close cycles\n",
      baselineKb, liveKb, kBoBytes >> 20, afterKb, kCycles);
  EXPECT_GE(liveKb - baselineKb, static_cast<long>(kBoBytes / 1024) * 3 / 4)
      << "a live BO's pages are the emulator's too";
  EXPECT_LE(afterKb - baselineKb, kSlackKb) << "closed BOs left memory in the emulator";
  EXPECT_EQ(liveBoRanges(shm), 0) << "BO pages outlived their BOs";
}

}  // namespace
}  // namespace qaic::emu::test
