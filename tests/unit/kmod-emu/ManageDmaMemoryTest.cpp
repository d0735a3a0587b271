// SPDX-License-Identifier: Apache-2.0
// Regression test for an emu_ioctl fuzzing finding: a DMA_XFER transaction claims `size` bytes
// at a user address, but the caller may be able to supply far fewer. The device must not size
// its copy from the claim (up to 2 GiB per transaction, zero-filled) before it has read a byte:
// any user with the node open could make the emulator take that memory at will.
//
// The device runs in a child process so that its peak resident size (ru_maxrss) is its own.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "Device.hpp"
#include "DeviceClient.hpp"
#include "MemoryFile.hpp"
#include "Sanitizers.hpp"

namespace qaic::emu {
namespace {

struct ChildResult {
  int rc = -1;
  long peakGrowthKb = -1;
};

long peakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// One MANAGE with a single DMA_XFER of `claimed` bytes whose first page is readable and whose
// second is not.
ChildResult transferMoreThanReadable(uint64_t claimed) {
  ChildResult result;
  auto shm = ShmDirectory::create();
  DeviceContext ctx;
  std::atomic<uint64_t> nextOffset{driver::kFirstMmapOffset};
  ctx.shm = shm.get();
  ctx.loader = containerProgramLoader(1);
  ctx.nextMmapOffset = &nextOffset;
  Device device(0, DeviceConfig{}, ctx);  // 16 GiB of DDR: the claim fits the device
  int error = 0;
  auto file = device.open(getuid(), getgid(), error);
  if (!file) return result;

  auto* pages = static_cast<std::byte*>(
      mmap(nullptr, 2 * driver::kPageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (pages == MAP_FAILED || mprotect(pages + driver::kPageSize, driver::kPageSize, PROT_NONE) != 0) return result;
  alignas(8) std::byte message[QAIC_MANAGE_MAX_MSG_LENGTH] = {};
  qaic_manage_trans_dma_xfer t{
      {QAIC_TRANS_DMA_XFER_FROM_USR, sizeof t}, 1, 0, reinterpret_cast<uint64_t>(pages), claimed};
  std::memcpy(message, &t, sizeof t);
  qaic_manage_msg arg{sizeof t, 1, reinterpret_cast<uint64_t>(message)};
  qaic_manage_msg out{};
  IoctlCall call{getpid(), &arg, sizeof arg, &out, sizeof out};

  const long before = peakRssKb();
  result.rc = device.ioctl(*file, DRM_IOCTL_QAIC_MANAGE, call);
  result.peakGrowthKb = peakRssKb() - before;
  device.release(file);
  munmap(pages, 2 * driver::kPageSize);
  return result;
}

TEST(ManageDmaMemory, ClaimBeyondTheReadableBytesIsRefusedWithoutTakingItsSize) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    const ChildResult r = transferMoreThanReadable(1ull << 30);
    _exit(write(fds[1], &r, sizeof r) == sizeof r ? 0 : 1);
  }
  close(fds[1]);
  ChildResult r;
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 120000), 1) << "the device did not answer within 120 s";
  ASSERT_EQ(read(fds[0], &r, sizeof r), static_cast<ssize_t>(sizeof r));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;

  EXPECT_EQ(r.rc, EFAULT) << std::strerror(r.rc);
  // The claim is 1 GiB; what the caller could supply is one page. Under AddressSanitizer the
  // reservation's shadow (an eighth of it, 128 MiB) is the sanitizer's own cost on top.
  constexpr long kLimitKb = 128 * 1024 + (testing::kAddressSanitizer ? (1l << 30) / 8 / 1024 : 0);
  EXPECT_LT(r.peakGrowthKb, kLimitKb) << "the device took " << r.peakGrowthKb / 1024
                                      << " MiB for a transfer it could not read";
}

}  // namespace
}  // namespace qaic::emu
