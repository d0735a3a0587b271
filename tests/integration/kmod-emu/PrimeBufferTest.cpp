// SPDX-License-Identifier: Apache-2.0
// GEM_CLOSE and PRIME: a BO's memory lives as long as its last holder (a handle, the slice of an
// activation, a queued request, an export the client still holds), exports are checked as the
// kernel makes them, and imports of an exported BO, a memfd or another device's export reach
// the same memory without a copy (docs/emulator.md, "Buffer objects, GEM and PRIME").
#include <drm.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "DeviceAttributes.hpp"
#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "InferenceRig.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

int ioctlErrno(const DeviceNode& node, unsigned long request, void* arg) {
  auto r = node.rawIoctl(request, arg, "ioctl");
  return r ? 0 : r.error();
}

int gemClose(const DeviceNode& node, uint32_t handle) {
  drm_gem_close c{handle, 0};
  return ioctlErrno(node, DRM_IOCTL_GEM_CLOSE, &c);
}

// A memfd sealed against shrinking, as udmabuf requires of its memory.
UniqueFd sealedMemfd(std::size_t bytes) {
  UniqueFd fd(::memfd_create("prime-test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0 ||
      ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)
    throw std::runtime_error("memfd");
  return fd;
}

std::vector<float> reluInput() {
  std::vector<float> x(kReluElements);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 7.5f) * 0.75f;
  return x;
}

void expectRelu(const std::vector<float>& x, std::span<const std::byte> y) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    float got;
    std::memcpy(&got, y.data() + i * sizeof(float), sizeof got);
    EXPECT_EQ(got, x[i] > 0 ? x[i] : 0.0f) << "element " << i;
  }
}

// True while the BO at `offset` holds its pages in the node's memory file: a freed BO's range is
// punched out, a hole.
bool boMemoryLive(const DeviceNode& node, uint64_t offset) {
  UniqueFd file(::open((node.shmDir() / deviceMemoryFileName(node.index())).c_str(), O_RDONLY | O_CLOEXEC));
  return file && ::lseek(file.get(), static_cast<off_t>(offset), SEEK_DATA) == static_cast<off_t>(offset);
}

class PrimeBufferTest : public EmuTest {
 protected:
  std::string config() const override {
    return R"({"devices": [{"nsps": 4, "dbcs": 4}, {"nsps": 4, "dbcs": 4}],
               "nodes": {"mode": "0600", "owner": "root", "group": "root"},
               "semaphore_timeout_ms": 3000})";
  }
  void SetUp() override {
    EmuTest::SetUp();
    image_ = container::QpcImage::fromBytes(relu_, "relu");
  }
  // One relu inference through EXECUTE_BO / WAIT_BO with input x.
  void runRelu(const DeviceNode& node, InferenceRig& rig, uint32_t dbc) {
    rig.writeRequestDescriptor(1);
    std::memset(rig.buffer("y").data(), 0xff, rig.buffer("y").size());
    auto submitted = node.execute(dbc, rig.executeEntries());
    ASSERT_TRUE(submitted) << submitted.message();
    auto done = node.waitBo(rig.lastHandle(), dbc, 20000);
    ASSERT_TRUE(done) << done.message();
    EXPECT_EQ(rig.responseHeader().status, DBC_COMPLETION_SUCCESS);
  }
  std::unique_ptr<container::QpcImage> image_;
};

// A mapping of the node at a BO's MMAP_BO offset (FUSE passthrough onto its memory file); null
// with errno when mmap fails.
std::byte* mapNode(const DeviceNode& node, uint64_t offset, std::size_t bytes) {
  void* view = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, node.fd(), static_cast<off_t>(offset));
  return view == MAP_FAILED ? nullptr : static_cast<std::byte*>(view);
}

// mmap of the node at the MMAP_BO offset is the device's view of the BO, as on mainline: the
// input written there is what the device reads, its output lands there.
TEST_F(PrimeBufferTest, MmapOfTheNodeSharesTheBoWithTheDevice) {
  EXPECT_EQ(sysfs().read(driver::sysfs::kEmuPassthrough).value(), "1");
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  InferenceRig rig(node, *image_, 0, dbc);
  rig.attachAll();
  const std::size_t xBytes = rig.buffer("x").size(), yBytes = rig.buffer("y").size();
  std::byte* x = mapNode(node, rig.slot("x").bo.mmapOffset(), xBytes);
  std::byte* y = mapNode(node, rig.slot("y").bo.mmapOffset(), yBytes);
  ASSERT_TRUE(x && y) << std::strerror(errno);
  const auto input = reluInput();
  std::memcpy(x, input.data(), input.size() * sizeof(float));
  runRelu(node, rig, dbc);
  expectRelu(input, std::span<const std::byte>(y, yBytes));
  ::munmap(x, xBytes);
  ::munmap(y, yBytes);
}

// Two open files of the node, one holding the BO by PRIME import, map the same pages at the same
// offset and see each other's writes; libqaic's import maps them too, at the export's position.
TEST_F(PrimeBufferTest, TwoOpensOfTheNodeMapTheSameBoAfterImport) {
  auto first = openNode();
  auto second = openNode();
  auto bo = BufferObject::create(first, 8192);
  ASSERT_TRUE(bo) << bo.message();
  const int fd = exportBo(first, bo->handle());
  ASSERT_GE(fd, 0) << std::strerror(-fd);
  UniqueFd exported(fd);
  ASSERT_GT(importFd(second, exported.get()), 0);
  std::byte* a = mapNode(first, bo->mmapOffset(), 8192);
  std::byte* b = mapNode(second, bo->mmapOffset(), 8192);
  ASSERT_TRUE(a && b) << std::strerror(errno);
  std::memcpy(a, "written by the first", 20);
  std::memcpy(b + 4096, "written by the second", 21);
  EXPECT_EQ(std::memcmp(b, "written by the first", 20), 0);
  EXPECT_EQ(std::memcmp(a + 4096, "written by the second", 21), 0);
  EXPECT_EQ(std::memcmp(bo->data() + 4096, "written by the second", 21), 0) << "libqaic's own mapping";
  auto imported = BufferObject::import(second, exported.get());
  ASSERT_TRUE(imported) << imported.message();
  EXPECT_EQ(imported->size(), 8192u) << "the BO's pages, up to the hole after them";
  EXPECT_EQ(std::memcmp(imported->data(), "written by the first", 20), 0);
  EXPECT_EQ(::lseek(exported.get(), 0, SEEK_CUR), static_cast<off_t>(bo->mmapOffset())) << "position kept";
  ::munmap(a, 8192);
  ::munmap(b, 8192);
}

// An emulator without FUSE passthrough says so in sysfs; mmap of its node is ENODEV, and libqaic
// maps the node's memory file at the BO's offset instead: inference, export and import still work.
class NoPassthroughTest : public PrimeBufferTest {
 protected:
  std::vector<std::string> arguments() const override { return {"--no-passthrough"}; }
};

TEST_F(NoPassthroughTest, MmapOfTheNodeIsEnodevAndLibqaicMapsTheMemoryFile) {
  EXPECT_EQ(sysfs().read(driver::sysfs::kEmuPassthrough).value(), "0");
  auto node = openNode();
  auto handle = node.createBo(4096);
  ASSERT_TRUE(handle) << handle.message();
  auto offset = node.mmapBo(*handle);
  ASSERT_TRUE(offset) << offset.message();
  errno = 0;
  EXPECT_EQ(mapNode(node, *offset, 4096), nullptr);
  EXPECT_EQ(errno, ENODEV);
  const uint32_t dbc = activateRelu(node);
  InferenceRig rig(node, *image_, 0, dbc);
  rig.attachAll();
  const auto input = reluInput();
  std::memcpy(rig.buffer("x").data(), input.data(), input.size() * sizeof(float));
  runRelu(node, rig, dbc);
  expectRelu(input, rig.buffer("y"));
  const int fd = exportBo(node, rig.slot("y").handle);
  ASSERT_GE(fd, 0) << std::strerror(-fd);
  UniqueFd exported(fd);
  auto other = openNode();
  auto imported = BufferObject::import(other, exported.get());
  ASSERT_TRUE(imported) << imported.message();
  expectRelu(input, std::span<const std::byte>(imported->data(), rig.buffer("y").size()));
}

TEST_F(PrimeBufferTest, GemCloseFreesTheBoAndItsMemoryAtOnce) {
  auto node = openNode();
  auto handle = node.createBo(1 << 20);
  ASSERT_TRUE(handle) << handle.message();
  const uint64_t offset = *node.mmapBo(*handle);
  ASSERT_TRUE(boMemoryLive(node, offset));
  EXPECT_EQ(gemClose(node, *handle), 0);
  EXPECT_FALSE(boMemoryLive(node, offset)) << "nothing else held the BO";
  EXPECT_EQ(node.mmapBo(*handle).error(), ENOENT);
  EXPECT_EQ(gemClose(node, *handle), EINVAL) << "an unknown handle is EINVAL, as drm_gem_close_ioctl";
  EXPECT_EQ(gemClose(node, 999), EINVAL);
  auto other = node.createBo(4096);
  ASSERT_TRUE(other);
  EXPECT_NE(*other, *handle) << "handles are not reused";
  drm_gem_close padded{*other, 1};
  EXPECT_EQ(ioctlErrno(node, DRM_IOCTL_GEM_CLOSE, &padded), EINVAL);
}

// The kernel's references: a closed BO that is sliced and queued still completes its request,
// its memory (the output here) receives the result, and it goes when the slice does.
TEST_F(PrimeBufferTest, ClosedBoThatIsSlicedAndQueuedCompletesThenGoesWithItsSlice) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  InferenceRig rig(node, *image_, 0, dbc);
  rig.attachAll();
  const auto x = reluInput();
  std::memcpy(rig.buffer("x").data(), x.data(), x.size() * sizeof(float));
  rig.writeRequestDescriptor(1);
  const uint64_t y = rig.slot("y").bo.mmapOffset();
  // The program is held so that the output's request is surely queued when its handle goes.
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "1"));
  auto submitted = node.execute(dbc, rig.executeEntries());
  ASSERT_TRUE(submitted) << submitted.message();
  ASSERT_EQ(gemClose(node, rig.slot("y").handle), 0);
  EXPECT_TRUE(boMemoryLive(node, y)) << "the queued request and the slice still hold it";
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "0"));
  auto done = node.waitBo(rig.lastHandle(), dbc, 20000);
  ASSERT_TRUE(done) << done.message();
  EXPECT_EQ(rig.responseHeader().status, DBC_COMPLETION_SUCCESS);
  expectRelu(x, rig.buffer("y"));
  EXPECT_TRUE(boMemoryLive(node, y)) << "the slice holds it until the activation ends";
  ASSERT_TRUE(deactivate(node, dbc));
  EXPECT_FALSE(boMemoryLive(node, y)) << "its last holder, the slice, went with the activation";
  EXPECT_TRUE(boMemoryLive(node, rig.slot("x").bo.mmapOffset())) << "BOs that still have handles stay";
}

// The end of an activation detaches the BOs sliced to it (release_dbc): they serve the next one.
TEST_F(PrimeBufferTest, BosOfAnEndedActivationCanBeSlicedAgain) {
  auto node = openNode();
  const uint32_t first = activateRelu(node, 1);
  InferenceRig rig(node, *image_, 0, first);
  rig.attachAll();
  ASSERT_TRUE(deactivate(node, first));
  const uint32_t second = activateRelu(node, 2);
  auto image = container::QpcImage::fromBytes(relu_, "relu");
  // The same BOs, attached to the new DBC through a rig that adopts their handles.
  InferenceRig again(node, *image, 0, second);
  for (const char* name : {"request descriptor", "x", "y", "response descriptor"})
    again.useHandle(name, rig.slot(name).handle);
  again.attachAll();
  const auto x = reluInput();
  std::memcpy(rig.buffer("x").data(), x.data(), x.size() * sizeof(float));
  rig.writeRequestDescriptor(1);
  auto submitted = node.execute(second, again.executeEntries());
  ASSERT_TRUE(submitted) << submitted.message();
  auto done = node.waitBo(again.lastHandle(), second, 20000);
  ASSERT_TRUE(done) << done.message();
  expectRelu(x, rig.buffer("y"));
}

// An export is the node's memory file at the BO's offset: it maps the BO's pages there for as
// long as the BO lives, however many handles of it closed; an import on another file holds it.
TEST_F(PrimeBufferTest, AnExportOutlivesTheHandleAndMapsTheSameMemory) {
  auto node = openNode();
  auto holder = openNode();
  auto bo = BufferObject::create(node, 8192);
  ASSERT_TRUE(bo) << bo.message();
  std::memcpy(bo->data() + 100, "exported", 8);
  const int fd = exportBo(node, bo->handle());
  ASSERT_GE(fd, 0) << std::strerror(-fd);
  UniqueFd exported(fd);
  EXPECT_EQ(::lseek(exported.get(), 0, SEEK_CUR), static_cast<off_t>(bo->mmapOffset())) << "positioned at its BO";
  const auto held = importFd(holder, exported.get());
  ASSERT_GT(held, 0) << std::strerror(static_cast<int>(-held));
  const uint64_t offset = bo->mmapOffset();
  ASSERT_EQ(gemClose(node, bo->handle()), 0);
  EXPECT_TRUE(boMemoryLive(node, offset)) << "the other file's import holds it";
  void* view = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, exported.get(), static_cast<off_t>(offset));
  ASSERT_NE(view, MAP_FAILED) << std::strerror(errno);
  EXPECT_EQ(std::memcmp(static_cast<char*>(view) + 100, "exported", 8), 0);
  // Imported again after its handle closed: still the same pages.
  auto again = importFd(node, exported.get());
  ASSERT_GT(again, 0) << std::strerror(static_cast<int>(-again));
  EXPECT_EQ(node.mmapBo(static_cast<uint32_t>(again)).error(), EINVAL) << "an import maps through its fd";
  // Its last holders gone, the BO's pages go too: the export's mapping reads zeros and the
  // descriptor names no BO any more (docs/emulator.md, "What still tells the difference").
  ASSERT_EQ(gemClose(node, static_cast<uint32_t>(again)), 0);
  ASSERT_EQ(gemClose(holder, static_cast<uint32_t>(held)), 0);
  EXPECT_FALSE(boMemoryLive(node, offset));
  EXPECT_EQ(static_cast<char*>(view)[100], 0);
  ::munmap(view, 8192);
  EXPECT_EQ(importFd(node, exported.get()), -EINVAL);
}

TEST_F(PrimeBufferTest, ExportChecksFlagsHandleAndTheDescriptorLikeTheKernel) {
  auto node = openNode();
  auto handle = node.createBo(4096);
  auto other = node.createBo(4096);
  ASSERT_TRUE(handle && other);
  // Descriptors of the node's memory file, each positioned at a BO as an export is.
  const auto path = node.shmDir() / deviceMemoryFileName(0);
  auto openAt = [&](int flags, uint64_t offset) {
    UniqueFd fd(::open(path.c_str(), flags));
    if (fd && ::lseek(fd.get(), static_cast<off_t>(offset), SEEK_SET) < 0) fd.reset();
    return fd;
  };
  const uint64_t offset = *node.mmapBo(*handle);
  UniqueFd rw = openAt(O_RDWR | O_CLOEXEC, offset);
  UniqueFd ro = openAt(O_RDONLY | O_CLOEXEC, offset);
  UniqueFd inheritable = openAt(O_RDWR, offset);
  UniqueFd elsewhere = openAt(O_RDWR | O_CLOEXEC, *node.mmapBo(*other));
  UniqueFd nowhere = openAt(O_RDWR | O_CLOEXEC, 0);
  ASSERT_TRUE(rw && ro && inheritable && elsewhere && nowhere);
  auto tryExport = [&](uint32_t h, uint32_t flags, int fd) {
    drm_prime_handle p{h, flags, fd};
    return ioctlErrno(node, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);
  };
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR | 0x4, rw.get()), EINVAL) << "unknown flag";
  EXPECT_EQ(tryExport(4242, DRM_CLOEXEC | DRM_RDWR, rw.get()), ENOENT) << "unknown handle";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, -1), EBADF) << "no descriptor (plain libdrm)";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, 9999), EBADF);
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, elsewhere.get()), EINVAL) << "another BO's memory";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, nowhere.get()), EINVAL) << "the file, but not at the BO";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, ro.get()), EINVAL) << "read-only for DRM_RDWR";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC, rw.get()), EINVAL) << "read-write without DRM_RDWR";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, inheritable.get()), EINVAL) << "cloexec mismatch";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC, ro.get()), 0);
  EXPECT_EQ(tryExport(*handle, DRM_RDWR, inheritable.get()), 0);
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, rw.get()), 0);
}

TEST_F(PrimeBufferTest, ImportOnTheSameFileGivesTheSameHandleElsewhereANewOne) {
  auto node = openNode();
  auto bo = BufferObject::create(node, 4096);
  ASSERT_TRUE(bo);
  UniqueFd exported(exportBo(node, bo->handle()));
  ASSERT_TRUE(exported);
  EXPECT_EQ(importFd(node, exported.get()), bo->handle());
  auto otherFile = openNode();
  auto imported = importFd(otherFile, exported.get());
  ASSERT_GT(imported, 0) << std::strerror(static_cast<int>(-imported));
  EXPECT_EQ(importFd(otherFile, exported.get()), imported) << "the second import finds the first";
  EXPECT_EQ(otherFile.mmapBo(static_cast<uint32_t>(imported)).error(), EINVAL);
  EXPECT_EQ(importFd(node, -1), -EBADF);
  EXPECT_EQ(importFd(node, 9999), -EBADF);
  UniqueFd notMemory(::open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(importFd(node, notMemory.get()), -EINVAL) << "neither shared memory nor a dma-buf";
  auto memfd = sealedMemfd(4096);
  UniqueFd readOnly(::open(("/proc/self/fd/" + std::to_string(memfd.get())).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(readOnly);
  EXPECT_EQ(importFd(node, readOnly.get()), -EACCES) << "the device would write through a read-only fd";
  UniqueFd empty(::memfd_create("empty", MFD_CLOEXEC));
  EXPECT_EQ(importFd(node, empty.get()), -EINVAL);
}

// The export of one open file's BO, imported on another open file and on another device, is the
// input of their inferences: the same pages, no copy.
TEST_F(PrimeBufferTest, AnExportIsTheInputOfAnotherFileAndAnotherDevice) {
  auto exporter = openNode();
  auto shared = BufferObject::create(exporter, 4096);
  ASSERT_TRUE(shared) << shared.message();
  const auto x = reluInput();
  std::memcpy(shared->data(), x.data(), x.size() * sizeof(float));
  UniqueFd exported(exportBo(exporter, shared->handle()));
  ASSERT_TRUE(exported);
  for (unsigned device : {0u, 1u}) {
    SCOPED_TRACE("device " + std::to_string(device));
    auto node = DeviceNode::open(root(), device);
    ASSERT_TRUE(node) << node.message();
    const uint32_t dbc = activateRelu(*node);
    auto imported = importFd(*node, exported.get());
    ASSERT_GT(imported, 0) << std::strerror(static_cast<int>(-imported));
    InferenceRig rig(*node, *image_, 0, dbc);
    rig.useHandle("x", static_cast<uint32_t>(imported));
    rig.attachAll();
    runRelu(*node, rig, dbc);
    expectRelu(x, rig.buffer("y"));
  }
}

TEST_F(PrimeBufferTest, AnImportedMemfdIsAnInputWithoutACopy) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  auto memfd = sealedMemfd(4096);
  const auto x = reluInput();
  ASSERT_EQ(::pwrite(memfd.get(), x.data(), x.size() * sizeof(float), 0),
            static_cast<ssize_t>(x.size() * sizeof(float)));
  auto imported = importFd(node, memfd.get());
  ASSERT_GT(imported, 0) << std::strerror(static_cast<int>(-imported));
  EXPECT_EQ(node.mmapBo(static_cast<uint32_t>(imported)).error(), EINVAL);
  InferenceRig rig(node, *image_, 0, dbc);
  rig.useHandle("x", static_cast<uint32_t>(imported));
  rig.attachAll();
  runRelu(node, rig, dbc);
  expectRelu(x, rig.buffer("y"));
  // The device reads the memfd's pages as they are now.
  const auto x2 = std::vector<float>(kReluElements, 3.5f);
  ASSERT_EQ(::pwrite(memfd.get(), x2.data(), x2.size() * sizeof(float), 0),
            static_cast<ssize_t>(x2.size() * sizeof(float)));
  runRelu(node, rig, dbc);
  expectRelu(x2, rig.buffer("y"));
}

// The client owns an imported file: shrinking it under the device's mapping fails the DMA
// (DMA_FAILED, WAIT_BO EIO), and the emulator lives on.
TEST_F(PrimeBufferTest, ATruncatedImportFailsItsDmaNotTheEmulator) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  UniqueFd memfd(::memfd_create("shrinking", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(memfd.get(), 4096), 0);
  auto imported = importFd(node, memfd.get());
  ASSERT_GT(imported, 0) << std::strerror(static_cast<int>(-imported));
  InferenceRig rig(node, *image_, 0, dbc);
  rig.useHandle("x", static_cast<uint32_t>(imported));
  rig.attachAll();
  ASSERT_EQ(::ftruncate(memfd.get(), 0), 0);
  rig.writeRequestDescriptor(1);
  auto submitted = node.execute(dbc, rig.executeEntries());
  ASSERT_TRUE(submitted) << submitted.message();
  auto done = node.waitBo(static_cast<uint32_t>(imported), dbc, 20000);
  EXPECT_EQ(done.error(), EIO) << "the input's request completed with an error code";
  EXPECT_TRUE(emulatorAlive());
  EXPECT_EQ(attribute(driver::sysfs::kEmuNetworksActive), 1u);
}

}  // namespace
}  // namespace qaic::emu::test
