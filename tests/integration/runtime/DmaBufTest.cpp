// SPDX-License-Identifier: Apache-2.0
// libqaic's DMA buffers through libdrm's PRIME calls: DmaBuffer::fd() is a dma-buf export, a
// QBuffer may name any dma-buf descriptor (a DMA buffer of another device, a memfd) and the set's
// device imports it and uses its pages in place (TransferCounts: nothing copied on the host),
// and a destroyed DMA buffer or set gives its device memory back while the context lives on.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "DeviceAttributes.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

constexpr int kElements = 1024;
constexpr std::size_t kBytes = kElements * sizeof(float);

std::vector<float> ramp(float start) {
  std::vector<float> v(kElements);
  for (int i = 0; i < kElements; ++i) v[static_cast<std::size_t>(i)] = start + 0.25f * static_cast<float>(i);
  return v;
}

class DmaBufTest : public RuntimeTest {
 protected:
  std::string emulatorConfig() const override {
    return R"({"devices": [{"nsps": 4, "dbcs": 4}, {"nsps": 4, "dbcs": 4}],
               "semaphore_timeout_ms": 5000})";
  }
  void SetUp() override {
    RuntimeTest::SetUp();
    network_ = compile("add", addNetworkIr(kElements));
    context_ = makeContext();
  }
  // One inference of c = a + b; returns the handle's transfer counts.
  TransferCounts run(InferenceSet& set, const std::vector<QBuffer>& buffers, uint64_t id) {
    shInferenceHandle h;
    EXPECT_EQ(set.getAvailable(h, 5'000'000), QS_SUCCESS);
    if (!h) return {};
    h->setBuffers(buffers);
    set.submit(h, id);
    shInferenceHandle done;
    EXPECT_EQ(set.getCompletedId(done, id, 20'000'000), QS_SUCCESS) << (done ? done->getErrorMessage() : "");
    if (!done) return {};
    const TransferCounts counts = done->getTransferCounts();
    set.putCompleted(done);
    return counts;
  }
  int boFiles() const { return testing::liveBoRanges(readShmDir()); }
  std::filesystem::path readShmDir() const { return emu_->attribute(0, driver::sysfs::kEmuShmDir); }
  Network network_;
};

void expectSum(const void* c, const std::vector<float>& a, const std::vector<float>& b) {
  for (int i = 0; i < kElements; ++i) {
    float got;
    std::memcpy(&got, static_cast<const std::byte*>(c) + static_cast<std::size_t>(i) * sizeof got, sizeof got);
    ASSERT_FLOAT_EQ(got, a[static_cast<std::size_t>(i)] + b[static_cast<std::size_t>(i)]) << "element " << i;
  }
}

TEST_F(DmaBufTest, ADmaBuffersFdIsADmaBufOfItsMemory) {
  auto dma = context_->allocateDmaBuffer(0, 3 * kBytes);
  std::memcpy(dma->data() + 100, "in the buffer", 13);
  ASSERT_GE(dma->fd(), 0);
  EXPECT_EQ(::fcntl(dma->fd(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(::fcntl(dma->fd(), F_GETFL) & O_ACCMODE, O_RDWR);
  // On the emulator the descriptor is the device's memory file positioned at the BO's offset,
  // where its pages are (a kernel dma-buf maps them at 0, and has position 0).
  const off_t at = ::lseek(dma->fd(), 0, SEEK_CUR);
  ASSERT_GE(at, 0);
  void* view = ::mmap(nullptr, 3 * kBytes, PROT_READ, MAP_SHARED, dma->fd(), at);
  ASSERT_NE(view, MAP_FAILED);
  EXPECT_EQ(std::memcmp(static_cast<char*>(view) + 100, "in the buffer", 13), 0);
  ::munmap(view, 3 * kBytes);
}

// Heap buffers are staged (copied on the host); DMA buffers of the set's own device are not.
TEST_F(DmaBufTest, TransferCountsTellStagedFromInPlace) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  auto a = ramp(1), b = ramp(-3);
  std::vector<float> c(kElements);
  const TransferCounts heap = run(*set, {heapBuffer(a), heapBuffer(b), heapBuffer(c)}, 1);
  EXPECT_EQ(heap.hostCopiedBytes, 3 * kBytes);
  EXPECT_EQ(heap.inPlaceBytes, 0u);
  // A BO is sliced in one direction: inputs in one DMA buffer, the output in another.
  auto inputs = set->allocateDmaBuffer(2 * kBytes);
  auto output = set->allocateDmaBuffer(kBytes);
  std::memcpy(inputs->data(), a.data(), kBytes);
  std::memcpy(inputs->data() + kBytes, b.data(), kBytes);
  const TransferCounts direct = run(
      *set, {inputs->qbuffer(0, kBytes), inputs->qbuffer(kBytes, kBytes), output->qbuffer()}, 2);
  EXPECT_EQ(direct.hostCopiedBytes, 0u);
  EXPECT_EQ(direct.inPlaceBytes, 3 * kBytes);
  expectSum(output->data(), a, b);
  // A heap output is staged: the counts say so.
  const TransferCounts mixed = run(*set, {inputs->qbuffer(0, kBytes), inputs->qbuffer(kBytes, kBytes), heapBuffer(c)},
                                   3);
  EXPECT_EQ(mixed.hostCopiedBytes, kBytes);
  EXPECT_EQ(mixed.inPlaceBytes, 2 * kBytes);
  expectSum(c.data(), a, b);
}

// The inputs live in a DMA buffer of device 0; a set on device 1 is given its descriptor: the
// runtime imports it there (drmPrimeFDToHandle) and the device reads the same pages.
TEST_F(DmaBufTest, ABufferOfAnotherDeviceIsImportedAndReadInPlace) {
  auto inputs = context_->allocateDmaBuffer(0, 2 * kBytes);
  auto a = ramp(2), b = ramp(5);
  std::memcpy(inputs->data(), a.data(), kBytes);
  std::memcpy(inputs->data() + kBytes, b.data(), kBytes);
  auto set = InferenceSet::Factory(context_, network_.qpc, 1, 1, 1);
  auto output = set->allocateDmaBuffer(kBytes);
  for (uint64_t id = 1; id <= 3; ++id) {
    const TransferCounts counts = run(
        *set, {inputs->qbuffer(0, kBytes), inputs->qbuffer(kBytes, kBytes), output->qbuffer()}, id);
    EXPECT_EQ(counts.hostCopiedBytes, 0u) << "inference " << id;
    EXPECT_EQ(counts.inPlaceBytes, 3 * kBytes);
    expectSum(output->data(), a, b);
    a[0] += 1.0f;  // written through device 0's mapping, read by device 1
    std::memcpy(inputs->data(), a.data(), sizeof(float));
  }
}

TEST_F(DmaBufTest, AMemfdIsAnInputAndAnOutputWithoutACopy) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  MemfdBuffer x(kBytes), y(kBytes), z(kBytes);
  auto a = ramp(-7), b = ramp(0.5f);
  std::memcpy(x.data(), a.data(), kBytes);
  std::memcpy(y.data(), b.data(), kBytes);
  const TransferCounts counts = run(*set, {x.qbuffer(), y.qbuffer(), z.qbuffer()}, 1);
  EXPECT_EQ(counts.hostCopiedBytes, 0u);
  EXPECT_EQ(counts.inPlaceBytes, 3 * kBytes);
  expectSum(z.data(), a, b);
}

TEST_F(DmaBufTest, ADescriptorTheDeviceCannotImportFailsTheInferenceNamingTheBuffer) {
  auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  const int notMemory = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  ASSERT_GE(notMemory, 0);
  std::vector<float> b = ramp(0), c(kElements);
  QBuffer bad;
  bad.type = QBUFFER_TYPE_DMABUF;
  bad.handle = notMemory;
  bad.size = kBytes;
  shInferenceHandle h;
  ASSERT_EQ(set->getAvailable(h, 5'000'000), QS_SUCCESS);
  h->setBuffers({bad, heapBuffer(b), heapBuffer(c)});
  set->submit(h, 1);
  shInferenceHandle done;
  EXPECT_EQ(set->getCompletedId(done, 1, 20'000'000), QS_INVAL);
  ASSERT_TRUE(done);
  EXPECT_NE(done->getErrorMessage().find("buffer 'a'"), std::string::npos) << done->getErrorMessage();
  set->putCompleted(done);
  ::close(notMemory);
}

// GEM_CLOSE when the C++ object goes: the device's memory files go with it while the context
// (its open node) lives on.
TEST_F(DmaBufTest, DestroyedBuffersAndSetsGiveTheirMemoryBackWithTheContextOpen) {
  const int before = boFiles();
  {
    auto dma = context_->allocateDmaBuffer(0, 8 << 20);
    EXPECT_EQ(boFiles(), before + 1);
  }
  EXPECT_EQ(boFiles(), before);
  {
    auto set = InferenceSet::Factory(context_, network_.qpc, 0, 1, 2);
    auto a = ramp(1), b = ramp(1);
    std::vector<float> c(kElements);
    run(*set, {heapBuffer(a), heapBuffer(b), heapBuffer(c)}, 1);
    EXPECT_GT(boFiles(), before) << "the set stages through BOs of its own";
  }
  EXPECT_EQ(boFiles(), before) << "the set's staging BOs outlived it";
}

}  // namespace
}  // namespace qaic::rt::test
