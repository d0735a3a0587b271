// SPDX-License-Identifier: Apache-2.0
// A network whose input travels in seed 003's native format (DWHC float16, more than 8 channels
// so the chunking applies) from a user buffer in NHWC, and whose output comes back as float
// NCHW: the runtime's preprocess / postprocess and the emulated NSP must together give the host
// executor's result.
#include <cmath>
#include <cstdlib>

#include "Paths.hpp"
#include "RuntimeFixture.hpp"

namespace qaic::rt::test {
namespace {

constexpr int C = 10, H = 3, W = 4;

std::string nativeFormatIr() {
  return R"({"ops":[{"name":"relu","optype":"relu","tensors_in":[{"arg_name":"src","name":"x"}],)"
         R"("tensors_out":[{"arg_name":"dst","name":"y"}],"params":[]}],"io":[)"
         R"({"name":"x","tensor":"x","direction":"in","dtype":"TL_FLOAT","dims":[1,10,3,4],"layout":"NHWC",)"
         R"("device_format":{"layout":"DWHC","dtype":"TL_FLOAT16"}},)"
         R"({"name":"y","tensor":"y","direction":"out","dtype":"TL_FLOAT","dims":[1,10,3,4],)"
         R"("device_format":{"layout":"flat","dtype":"TL_FLOAT"}}]})";
}

class DeviceFormatTest : public RuntimeTest {};

TEST_F(DeviceFormatTest, NativeLayoutAndPrecisionRoundTripMatchesTheHostExecutor) {
  auto network = compile("relu_dwhc", nativeFormatIr());
  context_ = makeContext();
  auto set = InferenceSet::Factory(context_, network.qpc, 0, 2, 1);
  for (int round = 0; round < 3; ++round) {
    // NHWC user data; values exactly representable in float16 so the device's input is lossless.
    std::vector<float> nhwc(C * H * W), nchw(C * H * W);
    for (int h = 0; h < H; ++h)
      for (int w = 0; w < W; ++w)
        for (int c = 0; c < C; ++c) {
          const float v = static_cast<float>((c * 7 + h * 5 + w * 3 + round) % 19 - 9) / 8.0f;
          nhwc[static_cast<std::size_t>((h * W + w) * C + c)] = v;
          nchw[static_cast<std::size_t>((c * H + h) * W + w)] = v;
        }
    std::vector<float> y(C * H * W, -100.0f);
    inferOnce(*set, {heapBuffer(nhwc), heapBuffer(y)}, static_cast<uint64_t>(round));
    const auto want = expected(network, {nchw});  // the executor takes the logical NCHW tensor
    ASSERT_EQ(want[0].size(), y.size());
    for (std::size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], want[0][i]) << "element " << i;
  }
}

TEST_F(DeviceFormatTest, SmallCnnMatchesTheHostExecutor) {
  // examples/smallcnn: conv2d, relu, maxpool2d, gemm, softmax with weights; input DWHC float16.
  auto network = compileFile("smallcnn", testing::sourceDir() / "examples/smallcnn/smallcnn.json");
  context_ = makeContext();
  auto set = InferenceSet::Factory(context_, network.qpc, 0, 2, 1);
  const auto& mappings = network.qpc->getBufferMappings();
  ASSERT_EQ(mappings.size(), 2u);
  for (int round = 0; round < 3; ++round) {
    std::vector<float> image(mappings[0].size / sizeof(float));  // float16-exact values
    for (std::size_t i = 0; i < image.size(); ++i)
      image[i] = static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(round) * 13) % 33) - 16) / 16.0f;
    std::vector<float> probs(mappings[1].size / sizeof(float), -1.0f);
    inferOnce(*set, {heapBuffer(image), heapBuffer(probs)}, static_cast<uint64_t>(round));
    const auto want = expected(network, {image});
    ASSERT_EQ(want[0].size(), probs.size());
    for (std::size_t i = 0; i < probs.size(); ++i)
      EXPECT_NEAR(probs[i], want[0][i], 1e-6f + 1e-5f * std::fabs(want[0][i])) << "class " << i;
  }
}

}  // namespace
}  // namespace qaic::rt::test
