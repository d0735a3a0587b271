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

bool fileExists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(p, ec);
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

TEST_F(PrimeBufferTest, GemCloseFreesTheBoAndItsMemoryAtOnce) {
  auto node = openNode();
  auto handle = node.createBo(1 << 20);
  ASSERT_TRUE(handle) << handle.message();
  const auto file = node.shmDir() / boFileName(*node.mmapBo(*handle));
  ASSERT_TRUE(fileExists(file));
  EXPECT_EQ(gemClose(node, *handle), 0);
  EXPECT_FALSE(fileExists(file)) << "nothing else held the BO";
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
  const auto yFile = node.shmDir() / boFileName(rig.slot("y").bo.mmapOffset());
  // The program is held so that the output's request is surely queued when its handle goes.
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "1"));
  auto submitted = node.execute(dbc, rig.executeEntries());
  ASSERT_TRUE(submitted) << submitted.message();
  ASSERT_EQ(gemClose(node, rig.slot("y").handle), 0);
  EXPECT_TRUE(fileExists(yFile)) << "the queued request and the slice still hold it";
  ASSERT_TRUE(sysfs().write(driver::sysfs::kFaultNspHang, "0"));
  auto done = node.waitBo(rig.lastHandle(), dbc, 20000);
  ASSERT_TRUE(done) << done.message();
  EXPECT_EQ(rig.responseHeader().status, DBC_COMPLETION_SUCCESS);
  expectRelu(x, rig.buffer("y"));
  EXPECT_TRUE(fileExists(yFile)) << "the slice holds it until the activation ends";
  ASSERT_TRUE(deactivate(node, dbc));
  EXPECT_FALSE(fileExists(yFile)) << "its last holder, the slice, went with the activation";
  EXPECT_TRUE(fileExists(node.shmDir() / boFileName(rig.slot("x").bo.mmapOffset())))
      << "BOs that still have handles stay";
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

TEST_F(PrimeBufferTest, AnExportOutlivesTheHandleAndMapsTheSameMemory) {
  auto node = openNode();
  auto bo = BufferObject::create(node, 8192);
  ASSERT_TRUE(bo) << bo.message();
  std::memcpy(bo->data() + 100, "exported", 8);
  const int fd = exportBo(node, bo->handle());
  ASSERT_GE(fd, 0) << std::strerror(-fd);
  UniqueFd exported(fd);
  const auto file = node.shmDir() / boFileName(bo->mmapOffset());
  ASSERT_EQ(gemClose(node, bo->handle()), 0);
  EXPECT_FALSE(fileExists(file)) << "the device let go of it";
  struct stat st {};
  ASSERT_EQ(::fstat(exported.get(), &st), 0);
  EXPECT_EQ(st.st_nlink, 0u);
  void* view = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, exported.get(), 0);
  ASSERT_NE(view, MAP_FAILED) << std::strerror(errno);
  EXPECT_EQ(std::memcmp(static_cast<char*>(view) + 100, "exported", 8), 0);
  ::munmap(view, 8192);
  // Imported again after its handle closed: still the same pages.
  auto again = importFd(node, exported.get());
  ASSERT_GT(again, 0) << std::strerror(static_cast<int>(-again));
  EXPECT_EQ(node.mmapBo(static_cast<uint32_t>(again)).error(), EINVAL) << "an import maps through its fd";
}

TEST_F(PrimeBufferTest, ExportChecksFlagsHandleAndTheDescriptorLikeTheKernel) {
  auto node = openNode();
  auto handle = node.createBo(4096);
  auto other = node.createBo(4096);
  ASSERT_TRUE(handle && other);
  const auto path = node.shmDir() / boFileName(*node.mmapBo(*handle));
  UniqueFd rw(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  UniqueFd ro(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  UniqueFd inheritable(::open(path.c_str(), O_RDWR));
  UniqueFd elsewhere(::open((node.shmDir() / boFileName(*node.mmapBo(*other))).c_str(), O_RDWR | O_CLOEXEC));
  ASSERT_TRUE(rw && ro && inheritable && elsewhere);
  auto tryExport = [&](uint32_t h, uint32_t flags, int fd) {
    drm_prime_handle p{h, flags, fd};
    return ioctlErrno(node, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p);
  };
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR | 0x4, rw.get()), EINVAL) << "unknown flag";
  EXPECT_EQ(tryExport(4242, DRM_CLOEXEC | DRM_RDWR, rw.get()), ENOENT) << "unknown handle";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, -1), EBADF) << "no descriptor (plain libdrm)";
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, 9999), EBADF);
  EXPECT_EQ(tryExport(*handle, DRM_CLOEXEC | DRM_RDWR, elsewhere.get()), EINVAL) << "another BO's memory";
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
