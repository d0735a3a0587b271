// SPDX-License-Identifier: Apache-2.0
// CREATE_BO, MMAP_BO and DETACH_SLICE_BO argument checks, and the BO memory-file contract
// (docs/device-protocol.md section 1).
#include <drm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "DeviceClient.hpp"
#include "EmuTest.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;

TEST_F(EmuTest, CreateBoGivesDistinctHandlesAndSharedMemory) {
  auto node = openNode();
  auto a = BufferObject::create(node, 8192);
  auto b = BufferObject::create(node, 4096);
  ASSERT_TRUE(a) << a.message();
  ASSERT_TRUE(b) << b.message();
  EXPECT_NE(a->handle(), 0u);
  EXPECT_NE(a->handle(), b->handle());
  EXPECT_NE(a->mmapOffset(), b->mmapOffset());
  EXPECT_EQ(a->mmapOffset() % kPageSize, 0u);
  EXPECT_GE(a->mmapOffset(), kFirstMmapOffset);

  std::memcpy(a->data() + 5000, "through the mapping", 19);
  auto exported = node.primeHandleToFd(a->handle(), DRM_CLOEXEC | DRM_RDWR);
  ASSERT_TRUE(exported) << exported.message();
  // The export is the node's memory file positioned at the BO's offset, where its pages are.
  const off_t at = ::lseek(exported->get(), 0, SEEK_CUR);
  EXPECT_EQ(at, static_cast<off_t>(a->mmapOffset()));
  char seen[19] = {};
  ASSERT_EQ(::pread(exported->get(), seen, sizeof seen, at + 5000), 19);
  EXPECT_EQ(std::memcmp(seen, "through the mapping", 19), 0) << "export fd sees other memory";

  struct stat st {};
  ASSERT_EQ(::fstat(exported->get(), &st), 0);
  EXPECT_EQ(st.st_uid, ::getuid());
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_GE(static_cast<uint64_t>(st.st_size), a->mmapOffset() + 8192u);
}

TEST_F(EmuTest, MmapBoOffsetIsStableForTheSameHandle) {
  auto node = openNode();
  auto handle = node.createBo(4096);
  ASSERT_TRUE(handle) << handle.message();
  auto first = node.mmapBo(*handle);
  auto second = node.mmapBo(*handle);
  ASSERT_TRUE(first) << first.message();
  ASSERT_TRUE(second) << second.message();
  EXPECT_EQ(*first, *second);
  EXPECT_TRUE(std::filesystem::exists(node.shmDir() / deviceMemoryFileName(0)));
}

TEST_F(EmuTest, CreateBoRejectsZeroSizeNonzeroPadAndAbsurdSize) {
  auto node = openNode();
  EXPECT_TRUE(failsWith(node.createBo(0), EINVAL));

  qaic_create_bo padded{};
  padded.size = 4096;
  padded.pad = 1;
  EXPECT_TRUE(failsWith(node.rawIoctl(DRM_IOCTL_QAIC_CREATE_BO, &padded, "CREATE_BO"), EINVAL));

  auto huge = node.createBo(kMaxBoBytes + 1);
  ASSERT_FALSE(huge) << "a BO beyond the 4 GiB IOVA reach was created";
  EXPECT_TRUE(huge.error() == EINVAL || huge.error() == ENOMEM) << huge.message();
}

TEST_F(EmuTest, MmapBoRejectsUnknownHandleAndNonzeroPad) {
  auto node = openNode();
  EXPECT_TRUE(failsWith(node.mmapBo(12345), ENOENT));

  auto handle = node.createBo(4096);
  ASSERT_TRUE(handle);
  qaic_mmap_bo padded{};
  padded.handle = *handle;
  padded.pad = 7;
  EXPECT_TRUE(failsWith(node.rawIoctl(DRM_IOCTL_QAIC_MMAP_BO, &padded, "MMAP_BO"), EINVAL));
}

TEST_F(EmuTest, HandlesArePerOpenFile) {
  auto owner = openNode();
  auto other = openNode();
  auto handle = owner.createBo(4096);
  ASSERT_TRUE(handle);
  EXPECT_TRUE(failsWith(other.mmapBo(*handle), ENOENT)) << "a handle of another open file resolved";
}

TEST_F(EmuTest, DetachRejectsUnknownHandleAndNonzeroPad) {
  auto node = openNode();
  EXPECT_TRUE(failsWith(node.detachSlice(999), ENOENT));
  auto handle = node.createBo(4096);
  ASSERT_TRUE(handle);
  EXPECT_TRUE(failsWith(node.detachSlice(*handle), EINVAL)) << "detached a BO that was never attached";
  qaic_detach_slice padded{*handle, 1};
  EXPECT_TRUE(failsWith(node.rawIoctl(DRM_IOCTL_QAIC_DETACH_SLICE_BO, &padded, "DETACH_SLICE_BO"), EINVAL));
}

}  // namespace
}  // namespace qaic::emu::test
