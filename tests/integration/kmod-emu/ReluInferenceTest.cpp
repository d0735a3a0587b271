// SPDX-License-Identifier: Apache-2.0
// One inference of the relu test program by hand, through both paths a real driver offers:
// EXECUTE_BO / WAIT_BO, and the mapped ring + doorbell + eventfd interrupt. Also what the device
// does with bad requests on the ring (bad descriptor, addresses outside the owner's slices).
#include <cstring>

#include "DeviceClient.hpp"
#include "EmuTest.hpp"
#include "InferenceRig.hpp"
#include "ReluProgram.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

std::vector<float> reluInput(float shift) {
  std::vector<float> x(kReluElements);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 7.5f) * 0.5f + shift;
  return x;
}

void expectRelu(const std::vector<float>& x, std::span<const std::byte> y) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    float got;
    std::memcpy(&got, y.data() + i * sizeof(float), sizeof got);
    EXPECT_EQ(got, x[i] > 0 ? x[i] : 0.0f) << "element " << i << " of relu(" << x[i] << ")";
  }
}

class ReluInference : public EmuTest {
 protected:
  void SetUp() override {
    EmuTest::SetUp();
    image_ = container::QpcImage::fromBytes(relu_, "relu");
  }
  void prepare(InferenceRig& rig, const std::vector<float>& x, uint32_t sequence) {
    rig.writeRequestDescriptor(sequence);
    std::memcpy(rig.buffer("x").data(), x.data(), x.size() * sizeof(float));
    std::memset(rig.buffer("y").data(), 0xff, rig.buffer("y").size());  // NaN until written
  }
  void expectGoodResponse(const InferenceRig& rig) {
    const auto hdr = rig.responseHeader();
    EXPECT_EQ(hdr.magic, kResponseDescriptorMagic);
    EXPECT_EQ(hdr.status, DBC_COMPLETION_SUCCESS) << completionCodeName(static_cast<uint16_t>(hdr.status));
    EXPECT_EQ(hdr.bufferCount, 2u);
  }
  std::unique_ptr<container::QpcImage> image_;
};

TEST_F(ReluInference, ExecuteBoAndWaitBo) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  InferenceRig rig(node, *image_, 0, dbc);
  rig.attachAll();
  for (uint32_t sequence = 1; sequence <= 2; ++sequence) {
    const auto x = reluInput(sequence == 1 ? 0.0f : 2.25f);
    prepare(rig, x, sequence);
    auto submitted = node.execute(dbc, rig.executeEntries());
    ASSERT_TRUE(submitted) << submitted.message();
    auto done = node.waitBo(rig.lastHandle(), dbc, 20000);
    ASSERT_TRUE(done) << done.message();
    expectGoodResponse(rig);
    expectRelu(x, rig.buffer("y"));
  }
  qaic_perf_stats_entry stats{};
  stats.handle = rig.lastHandle();
  auto perf = node.perfStats(dbc, std::span(&stats, 1));
  ASSERT_TRUE(perf) << perf.message();
  EXPECT_GE(stats.num_queue_element, 1u);
}

TEST_F(ReluInference, PartialExecuteWithZeroResizeIsAWholeTransfer) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node);
  InferenceRig rig(node, *image_, 0, dbc);
  rig.attachAll();
  const auto x = reluInput(-1.0f);
  prepare(rig, x, 1);
  std::vector<qaic_partial_execute_entry> entries;
  for (const auto& e : rig.executeEntries()) entries.push_back({e.handle, e.dir, 0});
  auto submitted = node.partialExecute(dbc, entries);
  ASSERT_TRUE(submitted) << submitted.message();
  auto done = node.waitBo(rig.lastHandle(), dbc, 20000);
  ASSERT_TRUE(done) << done.message();
  expectGoodResponse(rig);
  expectRelu(x, rig.buffer("y"));
}

TEST_F(ReluInference, MappedRingDoorbellAndEventfd) {
  auto ring = activateReluOnRing();
  InferenceRig rig(ring.node, *image_, 0, ring.dbc);
  rig.attachAll();
  for (uint16_t reqId = 1; reqId <= 3; ++reqId) {
    const auto x = reluInput(static_cast<float>(reqId) - 2.0f);
    prepare(rig, x, reqId);
    auto submitted = ring.window.submit(rig.ringElements(reqId));
    ASSERT_TRUE(submitted) << submitted.message();
    std::vector<ResponseElement> responses;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (responses.empty() && std::chrono::steady_clock::now() < deadline) {
      auto fired = ring.interrupt.wait(1000ms);
      ASSERT_TRUE(fired) << fired.message();
      ResponseElement batch[4];
      auto n = ring.window.takeResponses(batch);
      ASSERT_TRUE(n) << n.message();
      responses.insert(responses.end(), batch, batch + *n);
    }
    ASSERT_EQ(responses.size(), 1u) << "one response per request";
    EXPECT_EQ(responses[0].reqId, reqId);
    EXPECT_EQ(responses[0].completionCode, DBC_COMPLETION_SUCCESS) << completionCodeName(responses[0].completionCode);
    expectGoodResponse(rig);
    expectRelu(x, rig.buffer("y"));
  }
}

TEST_F(ReluInference, RingSubmitLargerThanTheFreeSlotsIsEagain) {
  auto node = openNode();
  const uint32_t dbc = activateRelu(node, 1, 4);  // 3 usable slots; the request needs 4
  auto window = DbcWindow::map(node, dbc);
  ASSERT_TRUE(window) << window.message();
  InferenceRig rig(node, *image_, 0, dbc);
  rig.attachAll();
  prepare(rig, reluInput(0), 1);
  EXPECT_TRUE(failsWith(window->submit(rig.ringElements(1)), EAGAIN));
  EXPECT_EQ(window->requestSlotsFree(), 3u) << "a refused submit wrote part of the request";
}

TEST_F(ReluInference, BadRequestDescriptorCompletesWithBadRequest) {
  auto ring = activateReluOnRing();
  InferenceRig rig(ring.node, *image_, 0, ring.dbc);
  rig.attachAll();
  prepare(rig, reluInput(0), 1);
  std::memcpy(rig.buffer("request descriptor").data(), "XXXX", 4);  // wrong magic
  ASSERT_TRUE(ring.window.submit(rig.ringElements(5)));
  const auto response = awaitOneResponse(*this, ring.window, ring.interrupt, 20s);
  EXPECT_EQ(response.reqId, 5u);
  EXPECT_EQ(response.completionCode, DBC_COMPLETION_BAD_REQUEST) << completionCodeName(response.completionCode);
  EXPECT_EQ(rig.responseHeader().status, DBC_COMPLETION_BAD_REQUEST);
}

TEST_F(ReluInference, AddressOutsideTheOwnersSlicesIsBadAddress) {
  auto ring = activateReluOnRing();
  auto loose = BufferObject::create(ring.node, 4096);  // never attached
  ASSERT_TRUE(loose);
  std::memset(loose->data(), 0x7f, 4096);

  RequestElement fromLoose{};
  fromLoose.reqId = 9;
  fromLoose.cmd = kReqCmdToDevice | kReqCmdCompletion;
  fromLoose.srcAddr = loose->iova(0);
  fromLoose.dstAddr = kReluInputOffset;
  fromLoose.length = 64;
  ASSERT_TRUE(ring.window.submit(std::span(&fromLoose, 1)));
  auto response = awaitOneResponse(*this, ring.window, ring.interrupt, 20s);
  EXPECT_EQ(response.reqId, 9u);
  EXPECT_EQ(response.completionCode, DBC_COMPLETION_BAD_ADDRESS) << completionCodeName(response.completionCode);

  // Inside an attached slice on the host side, but past the IO region on the device side.
  InferenceRig rig(ring.node, *image_, 0, ring.dbc);
  rig.attachAll();
  RequestElement pastRegion{};
  pastRegion.reqId = 10;
  pastRegion.cmd = kReqCmdToDevice | kReqCmdCompletion;
  pastRegion.srcAddr = rig.slot("x").bo.iova(0);
  pastRegion.dstAddr = kReluIoRegion;
  pastRegion.length = 64;
  ASSERT_TRUE(ring.window.submit(std::span(&pastRegion, 1)));
  response = awaitOneResponse(*this, ring.window, ring.interrupt, 20s);
  EXPECT_EQ(response.reqId, 10u);
  EXPECT_EQ(response.completionCode, DBC_COMPLETION_BAD_ADDRESS) << completionCodeName(response.completionCode);
}

}  // namespace
}  // namespace qaic::emu::test
