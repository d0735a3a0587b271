// SPDX-License-Identifier: Apache-2.0
// Sizes, offsets, counts and handles chosen to overflow the emulator's arithmetic (u64 sums that
// wrap, page rounding that wraps, counts whose byte size overflows an allocation, handles that
// alias under the IOVA's 31-bit handle field). Each must be refused with the documented errno
// (docs/emulator.md), and the emulator must go on serving the same open file afterwards.
// What emu_uapi_tests already checks (offset UINT64_MAX - 10, resize 2x the BO, size 4 GiB + 1,
// handle 12345) is not repeated here.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <string>

#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kU32Max = std::numeric_limits<uint32_t>::max();

class OverflowIoctlTest : public BoOnReluTest {
 protected:
  static qaic_attach_slice_entry slice(uint64_t offset, uint64_t size) {
    qaic_attach_slice_entry e{};
    e.offset = offset;
    e.size = size;
    e.dev_addr = kReluInputOffset;
    return e;
  }

  // The daemon is alive and the same file still gets valid answers: a new BO with its memory
  // file, the activation's window, and the whole test BO attached as one slice.
  void expectStillServing(const std::string& after) {
    SCOPED_TRACE("after " + after);
    ASSERT_TRUE(emulatorAlive()) << "qaic-emu died";
    auto handle = node_->createBo(4096);
    ASSERT_TRUE(handle) << handle.message();
    auto offset = node_->mmapBo(*handle);
    EXPECT_TRUE(offset) << offset.message();
    auto info = node_->emuDbcInfo(dbc_);
    EXPECT_TRUE(info) << info.message();
    const auto whole = slice(0, kBoBytes);
    auto attached = node_->attachSlices(header(), std::span(&whole, 1));
    ASSERT_TRUE(attached) << attached.message();
    auto detached = node_->detachSlice(bo_->handle());
    EXPECT_TRUE(detached) << detached.message();
  }
};

TEST_F(OverflowIoctlTest, CreateBoSizesThatWrapOrExceedTheIovaReachAreEinval) {
  // 2^63 and beyond; UINT64_MAX - 4095 wraps to 0 when rounded up to a page.
  for (const uint64_t size :
       {uint64_t{1} << 63, (uint64_t{1} << 63) + 4096, kU64Max - 4095, kU64Max, kMaxBoBytes + 4096}) {
    auto bo = node_->createBo(size);
    ASSERT_FALSE(bo) << "CREATE_BO of " << size << " bytes succeeded";
    EXPECT_EQ(bo.error(), EINVAL) << size << ": " << bo.message();
  }
  expectStillServing("CREATE_BO overflows");
}

TEST_F(OverflowIoctlTest, AttachSliceRangesThatWrapAreEinval) {
  struct Case {
    uint64_t offset, size;
    const char* why;
  };
  const Case cases[] = {
      {4096, kU64Max - 4095, "offset + size wraps to exactly 0"},
      {1, kU64Max, "offset + size wraps to 0"},
      {kU64Max, 1, "offset UINT64_MAX, size 1"},
      {0, kU64Max, "size UINT64_MAX"},
      {kBoBytes, kU64Max - kBoBytes + 2, "offset at the end, size wrapping to 1"},
      {uint64_t{1} << 63, uint64_t{1} << 63, "two halves of 2^64"},
  };
  for (const auto& c : cases) {
    const auto e = slice(c.offset, c.size);
    auto r = node_->attachSlices(header(), std::span(&e, 1));
    ASSERT_FALSE(r) << c.why;
    EXPECT_EQ(r.error(), EINVAL) << c.why << ": " << r.message();
  }
  // A wrapping second slice must not leave the first one attached.
  const qaic_attach_slice_entry pair[] = {slice(0, 4096), slice(4096, kU64Max - 4095)};
  EXPECT_TRUE(failsWith(node_->attachSlices(header(), pair), EINVAL)) << "second slice wraps";

  auto hdr = header();
  hdr.size = kU64Max;
  const auto whole = slice(0, kBoBytes);
  EXPECT_TRUE(failsWith(node_->attachSlices(hdr, std::span(&whole, 1)), EINVAL)) << "header size UINT64_MAX";
  expectStillServing("ATTACH_SLICE overflows");
}

TEST_F(OverflowIoctlTest, AttachSliceCountsBeyondTheLimitAreEinvalWithoutReadingThem) {
  // One real entry behind the pointer; the counts claim up to 4 G entries (~370 GB).
  qaic_attach_slice_entry one = slice(0, kBoBytes);
  for (const uint32_t count : {4097u, 0x8000'0000u, kU32Max}) {
    qaic_attach_slice arg{};
    arg.hdr = header();
    arg.hdr.count = count;
    arg.data = reinterpret_cast<uintptr_t>(&one);
    auto r = node_->rawIoctl(DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &arg, "ATTACH_SLICE_BO");
    ASSERT_FALSE(r) << "count " << count;
    EXPECT_EQ(r.error(), EINVAL) << "count " << count << ": " << r.message();
  }
  expectStillServing("ATTACH_SLICE counts");
}

TEST_F(OverflowIoctlTest, PartialExecuteResizeBeyondTheBoIsEinval) {
  const auto whole = slice(0, kBoBytes);
  ASSERT_TRUE(node_->attachSlices(header(), std::span(&whole, 1)));
  for (const uint64_t resize : {kBoBytes + 1, uint64_t{1} << 63, kU64Max, kU64Max - kBoBytes + 1}) {
    const qaic_partial_execute_entry entry[] = {{bo_->handle(), QAIC_DIR_TO_DEVICE, resize}};
    auto r = node_->partialExecute(dbc_, entry);
    ASSERT_FALSE(r) << "resize " << resize;
    EXPECT_EQ(r.error(), EINVAL) << "resize " << resize << ": " << r.message();
  }
  // Nothing was queued, so the BO detaches at once.
  auto detached = node_->detachSlice(bo_->handle());
  ASSERT_TRUE(detached) << detached.message();
  expectStillServing("PARTIAL_EXECUTE resizes");
}

TEST_F(OverflowIoctlTest, ExecuteAndPerfStatsCountsBeyondTheEntriesAreRefused) {
  // A count whose entries would not fit in memory, with one real entry behind the pointer: the
  // emulator must neither allocate for the count nor read past what the caller owns.
  qaic_execute_entry one{bo_->handle(), QAIC_DIR_TO_DEVICE};
  for (const unsigned long request : {DRM_IOCTL_QAIC_EXECUTE_BO, DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO}) {
    qaic_execute arg{};
    arg.hdr = {kU32Max, dbc_};
    arg.data = reinterpret_cast<uintptr_t>(&one);
    auto r = node_->rawIoctl(request, &arg, "EXECUTE_BO");
    ASSERT_FALSE(r) << "count UINT32_MAX";
    EXPECT_TRUE(r.error() == EINVAL || r.error() == ENOMEM || r.error() == EFAULT) << r.message();
  }
  // PERF_STATS has a 16-bit count and no smaller cap: the one real entry ends right before an
  // unreadable page, so reading what the count claims must fault rather than take whatever
  // follows the entry in this process's memory.
  const long page = ::sysconf(_SC_PAGESIZE);
  void* pages = ::mmap(nullptr, static_cast<std::size_t>(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(::mprotect(static_cast<std::byte*>(pages) + page, static_cast<std::size_t>(page), PROT_NONE), 0);
  auto* stats = reinterpret_cast<qaic_perf_stats_entry*>(static_cast<std::byte*>(pages) + page) - 1;
  *stats = qaic_perf_stats_entry{};
  stats->handle = bo_->handle();
  qaic_perf_stats perf{};
  perf.hdr = {0xffff, 0, dbc_};
  perf.data = reinterpret_cast<uintptr_t>(stats);
  auto r = node_->rawIoctl(DRM_IOCTL_QAIC_PERF_STATS_BO, &perf, "PERF_STATS_BO");
  ::munmap(pages, static_cast<std::size_t>(2 * page));
  ASSERT_FALSE(r) << "PERF_STATS count 65535";
  EXPECT_TRUE(r.error() == EINVAL || r.error() == EFAULT) << r.message();
  expectStillServing("EXECUTE / PERF_STATS counts");
}

TEST_F(OverflowIoctlTest, ManageLengthsBeyondTheMessageLimitAreEinval) {
  std::byte message[64] = {};
  for (const uint32_t len : {QAIC_MANAGE_MAX_MSG_LENGTH + 1, 0x8000'0000u, kU32Max}) {
    qaic_manage_msg arg{};
    arg.len = len;
    arg.count = 1;
    arg.data = reinterpret_cast<uintptr_t>(message);
    auto r = node_->rawIoctl(DRM_IOCTL_QAIC_MANAGE, &arg, "MANAGE");
    ASSERT_FALSE(r) << "len " << len;
    EXPECT_EQ(r.error(), EINVAL) << "len " << len << ": " << r.message();
  }
  expectStillServing("MANAGE lengths");
}

TEST_F(OverflowIoctlTest, MmapOfHugeOrAliasingHandlesIsEnoent) {
  // The IOVA keeps 31 handle bits: a handle with bit 31 set must not alias the real one.
  const uint32_t real = bo_->handle();
  for (const uint32_t handle : {kU32Max, 0x8000'0000u | real, 0x7fff'ffffu, real + 0x10000u}) {
    auto r = node_->mmapBo(handle);
    ASSERT_FALSE(r) << "MMAP_BO of handle " << handle;
    EXPECT_EQ(r.error(), ENOENT) << handle << ": " << r.message();
  }
  const auto whole = slice(0, kBoBytes);
  auto hdr = header();
  hdr.handle = 0x8000'0000u | real;
  EXPECT_TRUE(failsWith(node_->attachSlices(hdr, std::span(&whole, 1)), ENOENT))
      << "ATTACH_SLICE through an aliasing handle";
  expectStillServing("huge handles");
}

}  // namespace
}  // namespace qaic::emu::test
