// SPDX-License-Identifier: Apache-2.0
// Partial, specialized and selective IO (seed 000's buffer types) through the whole pipeline.
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

class IoShapesTest : public RuntimeTest {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    context_ = makeContext();
  }

  std::vector<float> signedRamp(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) - static_cast<float>(n) / 2;
    return v;
  }

  // A free handle of `set` for relu's x -> y, both with the actual `dims`.
  static shInferenceHandle acquireWithDims(InferenceSet& set, std::vector<float>& x, std::vector<float>& y,
                                           const std::vector<uint64_t>& dims) {
    auto h = acquireWith(set, {heapBuffer(x), heapBuffer(y)});
    h->setBufferDims(0, dims);
    h->setBufferDims(1, dims);
    return h;
  }
};

TEST_F(IoShapesTest, PartialBufferRunsWithTheActualDims) {
  auto network = compile("relu_partial", reluNetworkIr(64, true));
  auto set = InferenceSet::Factory(context_, network.qpc, 0, 1, 1);
  auto x = signedRamp(40);
  std::vector<float> y(64, 123.0f);
  auto h = acquireWithDims(*set, x, y, {1, 40});
  auto done = submitAndWait(*set, h, 1);
  EXPECT_EQ(done->getOutputDims(1), (std::vector<uint64_t>{1, 40}));
  const auto want = expected(network, {x}, {{1, 40}});
  ASSERT_EQ(want[0].size(), 40u);
  for (std::size_t i = 0; i < 40; ++i) EXPECT_FLOAT_EQ(y[i], want[0][i]) << i;
  EXPECT_FLOAT_EQ(y[40], 123.0f) << "nothing written past the actual output";
  set->putCompleted(done);

  // More elements than the full dims: refused before anything reaches the device.
  std::vector<float> big(65);
  h = acquireWith(*set, {heapBuffer(big), heapBuffer(y)});
  h->setBufferDims(0, {1, 65});
  EXPECT_THROW(set->submit(h, 2), Error);
}

TEST_F(IoShapesTest, SpecializedNetworkAcceptsOnlyItsAllowedShapes) {
  const std::string shapes = R"(,"allowed_shapes":[{"x":[1,32],"y":[1,32]},{"x":[1,8],"y":[1,8]}])";
  auto network = compile("relu_special", reluNetworkIr(32, true, shapes));
  auto set = InferenceSet::Factory(context_, network.qpc, 0, 1, 1);
  auto x = signedRamp(8);
  std::vector<float> y(32, 7.0f);
  auto h = acquireWithDims(*set, x, y, {1, 8});
  auto done = submitAndWait(*set, h, 1);
  const auto want = expected(network, {x}, {{1, 8}});
  for (std::size_t i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y[i], want[0][i]) << i;
  set->putCompleted(done);

  auto x9 = signedRamp(9);
  h = acquireWithDims(*set, x9, y, {1, 9});
  EXPECT_TRUE(refused([&] { set->submit(h, 2); }, QS_BUFFER_DIMS, "allowed shapes"))
      << "a shape outside allowed_shapes";
}

TEST_F(IoShapesTest, SelectiveIoDropsOnlyWhatTheNetworkAllows) {
  // c = a + b where `a` may be dropped; a dropped input keeps what its device buffer last held.
  std::string ir = addNetworkIr(16);
  const std::string plainA = R"({"name":"a","tensor":"a","direction":"in","dtype":"TL_FLOAT","dims":[1,16]})";
  const std::string droppableA = R"({"name":"a","tensor":"a","direction":"in","dtype":"TL_FLOAT","dims":[1,16],)"
                                 R"("is_partial_allowed":true,"skip_partial_header":true,"allow_skip":true})";
  ir.replace(ir.find(plainA), plainA.size(), droppableA);
  auto network = compile("add_selective", ir);
  auto set = InferenceSet::Factory(context_, network.qpc, 0, 1, 1);
  std::vector<float> a(16, 1.0f), b(16, 2.0f), c(16, 0.0f);
  const std::vector<QBuffer> buffers{heapBuffer(a), heapBuffer(b), heapBuffer(c)};
  auto h = acquireWith(*set, buffers);
  auto done = submitAndWait(*set, h, 1);
  EXPECT_FLOAT_EQ(c[0], 3.0f);
  set->putCompleted(done);

  h = acquireWith(*set, buffers);
  std::fill(a.begin(), a.end(), 100.0f);  // must not reach the device: `a` is dropped
  std::fill(b.begin(), b.end(), 5.0f);
  h->setBufferSkipped(0, true);
  done = submitAndWait(*set, h, 2);
  EXPECT_FLOAT_EQ(c[15], 6.0f) << "the dropped input kept its previous value";
  set->putCompleted(done);

  h = acquireWith(*set, buffers);
  h->setBufferSkipped(0, false);
  h->setBufferSkipped(1, true);
  EXPECT_TRUE(refused([&] { set->submit(h, 3); }, QS_INVAL, "'b'")) << "dropping a regular buffer";
}

}  // namespace
}  // namespace qaic::rt::test
