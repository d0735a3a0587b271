// SPDX-License-Identifier: Apache-2.0
// Zero copy where the memory is already shared: when an input or output is a DMA buffer (or the
// runtime's own staging buffer object) in the identity device format, the emulated NSP reads
// and writes it in place instead of the device's DMA copying it through the IO region. The
// emulator's --trace-requests line says how many of a request's bytes were used in place; the
// results must be right whatever the buffers, including buffers that alias one another.
#include <algorithm>
#include <regex>

#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

constexpr int kElements = 256 * 1024;  // 1 MiB of floats each way
constexpr std::size_t kBytes = kElements * sizeof(float);

struct DeviceBytes {
  uint64_t toDevice = 0, fromDevice = 0, inPlace = 0;
};

class ZeroCopyTest : public RuntimeTest {
 protected:
  std::vector<std::string> emulatorArguments() const override { return {"--trace-requests"}; }
  void SetUp() override {
    RuntimeTest::SetUp();
    network_ = compile("relu", reluNetworkIr(kElements));
    context_ = makeContext();
    set_ = InferenceSet::Factory(context_, network_.qpc, 0, 1, 1);
  }
  void TearDown() override {
    set_.reset();
    RuntimeTest::TearDown();
  }

  // One inference of y = relu(x); returns the runtime's transfer counts.
  TransferCounts run(const QBuffer& x, const QBuffer& y) {
    shInferenceHandle h;
    EXPECT_EQ(set_->getAvailable(h, 5'000'000), QS_SUCCESS);
    if (!h) return {};
    h->setBuffers({x, y});
    set_->submit(h, ++id_);
    shInferenceHandle done;
    EXPECT_EQ(set_->getCompletedId(done, id_, 20'000'000), QS_SUCCESS) << (done ? done->getErrorMessage() : "");
    if (!done) return {};
    EXPECT_EQ(done->getStatus(), QS_SUCCESS) << done->getErrorMessage();
    const TransferCounts counts = done->getTransferCounts();
    set_->putCompleted(done);
    return counts;
  }

  // The device's account of the last request it ended (--trace-requests).
  DeviceBytes lastRequest() const {
    static const std::regex line(R"(ended, code 0, (\d+) bytes to the device, (\d+) from it, (\d+) of them in place)");
    const std::string log = emu_->log();
    DeviceBytes last;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it)
      last = {std::stoull((*it)[1]), std::stoull((*it)[2]), std::stoull((*it)[3])};
    return last;
  }

  static std::vector<float> signedRamp(int seed) {
    std::vector<float> v(kElements);
    for (int i = 0; i < kElements; ++i)
      v[static_cast<std::size_t>(i)] = static_cast<float>((i * 37 + seed) % 201 - 100);
    return v;
  }
  static void expectRelu(const std::vector<float>& x, const float* y) {
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], std::max(x[i], 0.0f)) << "element " << i;
  }

  Network network_;
  std::shared_ptr<InferenceSet> set_;
  uint64_t id_ = 0;
};

TEST_F(ZeroCopyTest, DmaBuffersAreReadAndWrittenInPlaceByTheNsp) {
  auto in = set_->allocateDmaBuffer(kBytes);
  auto out = set_->allocateDmaBuffer(kBytes);
  for (int round = 0; round < 3; ++round) {
    const auto x = signedRamp(round);
    std::copy(x.begin(), x.end(), reinterpret_cast<float*>(in->data()));
    std::fill_n(reinterpret_cast<float*>(out->data()), kElements, -1.0f);
    const TransferCounts counts = run(in->qbuffer(), out->qbuffer());
    EXPECT_EQ(counts.hostCopiedBytes, 0u);
    EXPECT_EQ(counts.inPlaceBytes, 2 * kBytes);
    const DeviceBytes device = lastRequest();
    EXPECT_GE(device.toDevice, kBytes);
    EXPECT_GE(device.fromDevice, kBytes);
    // Input and output: neither passed through the IO region (only the descriptors did).
    EXPECT_GE(device.inPlace, 2 * kBytes) << "round " << round;
    expectRelu(x, reinterpret_cast<const float*>(out->data()));
  }
}

// Heap buffers: the runtime converts into its staging buffer objects and back (one copy each
// way), and the NSP reads and writes the staging buffers in place.
TEST_F(ZeroCopyTest, HeapBuffersAreCopiedOnceEachWay) {
  for (int round = 0; round < 3; ++round) {
    auto x = signedRamp(round + 7);
    std::vector<float> y(kElements, -1.0f);
    const TransferCounts counts = run(heapBuffer(x), heapBuffer(y));
    EXPECT_EQ(counts.hostCopiedBytes, 2 * kBytes);
    EXPECT_EQ(counts.inPlaceBytes, 0u);
    EXPECT_GE(lastRequest().inPlace, 2 * kBytes) << "round " << round;
    expectRelu(x, y.data());
  }
}

// The output is the input's own memory, or overlaps it: the result is relu of the input as it
// was, however the buffers end up being moved.
TEST_F(ZeroCopyTest, AliasingBuffersGetTheRightResult) {
  auto both = set_->allocateDmaBuffer(kBytes + 4096);
  const auto x = signedRamp(3);
  auto* data = reinterpret_cast<float*>(both->data());
  std::copy(x.begin(), x.end(), data);
  run(both->qbuffer(0, kBytes), both->qbuffer(0, kBytes));
  expectRelu(x, data);
  // The output a page into the input.
  std::copy(x.begin(), x.end(), data);
  run(both->qbuffer(0, kBytes), both->qbuffer(4096, kBytes));
  expectRelu(x, data + 4096 / sizeof(float));
  // A heap output over a DMA input's mapping.
  std::copy(x.begin(), x.end(), data);
  QBuffer alias;
  alias.type = QBUFFER_TYPE_HEAP;
  alias.buf = both->data();
  alias.size = kBytes;
  run(both->qbuffer(0, kBytes), alias);
  expectRelu(x, data);
}

// More distinct DMA buffers than the program keeps plans for: the rest are copied, correctly.
TEST_F(ZeroCopyTest, ManyDistinctBuffersStayCorrect) {
  std::vector<std::shared_ptr<DmaBuffer>> ins, outs;
  for (int k = 0; k < 6; ++k) {
    ins.push_back(set_->allocateDmaBuffer(kBytes));
    outs.push_back(set_->allocateDmaBuffer(kBytes));
  }
  for (int round = 0; round < 2; ++round) {
    for (std::size_t k = 0; k < ins.size(); ++k) {
      const auto x = signedRamp(static_cast<int>(k) + round * 11);
      std::copy(x.begin(), x.end(), reinterpret_cast<float*>(ins[k]->data()));
      run(ins[k]->qbuffer(), outs[k]->qbuffer());
      expectRelu(x, reinterpret_cast<const float*>(outs[k]->data()));
    }
  }
}

}  // namespace
}  // namespace qaic::rt::test
