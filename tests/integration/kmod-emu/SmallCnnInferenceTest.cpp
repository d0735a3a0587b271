// SPDX-License-Identifier: Apache-2.0
// A full inference of the sample network examples/smallcnn by hand: compiled by qaic-exec in the
// fixture, activated, its input converted to the device format (FP16 DWHC), run through both
// EXECUTE_BO / WAIT_BO and the mapped ring, and compared with the host executor on the same
// (FP16-rounded) input.
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "CompileProgram.hpp"
#include "DeviceClient.hpp"
#include "DeviceData.hpp"
#include "EmuTest.hpp"
#include "HostExecutor.hpp"
#include "InferenceRig.hpp"
#include "IrGraphs.hpp"
#include "Process.hpp"

namespace qaic::emu::test {
using namespace qaic::testing;
namespace {

using namespace qaic::driver;
using namespace std::chrono_literals;

class SmallCnn : public EmuTest {
 protected:
  void SetUp() override {
    EmuTest::SetUp();
    if (HasFatalFailure()) return;
    const auto model = sourceDir() / "examples" / "smallcnn" / "smallcnn.json";
    const auto out = emu_->root().path().parent_path() / "smallcnn-qpc";
    const RunResult compiled = runCompiler(model, out, {}, 120s);
    ASSERT_EQ(compiled.exitCode, 0) << "qaic-exec failed:\n" << compiled.err << compiled.out;
    image_ = container::QpcImage::open((out / "programqpc.bin").string());
    qpcBytes_.assign(image_->bytes().begin(), image_->bytes().end());
    input_ = image_->findBuffer("image");
    output_ = image_->findBuffer("probs");
    ASSERT_NE(input_, nullptr) << "no buffer 'image' in the compiled program";
    ASSERT_NE(output_, nullptr) << "no buffer 'probs' in the compiled program";

    graph_ = ir::loadGraph(model.string());
    ir::inferShapes(graph_);
    weights_ = ir::WeightsFile::open((model.parent_path() / graph_.weightsFile).string());
  }

  // A deterministic image, converted into the rig's input BO; returns the FP16-rounded values the
  // device actually sees.
  std::vector<float> writeInput(InferenceRig& rig) {
    const auto& io = input_->io;
    std::vector<float> image(static_cast<std::size_t>(ir::elementCount(io.dims)));
    for (std::size_t i = 0; i < image.size(); ++i) image[i] = std::sin(static_cast<float>(i) * 0.37f) * 1.5f;
    const kernels::UserBufferView view{io.bufferName, io.dtype, io.userLayout, io.dims};
    auto device = rig.buffer(io.bufferName);
    kernels::userToDevice(view, std::as_bytes(std::span(image)), io.deviceFormat, device);
    std::vector<float> seen(image.size());
    kernels::deviceToUser(io.deviceFormat, device, view, std::as_writable_bytes(std::span(seen)));
    return seen;
  }

  std::vector<float> readOutput(InferenceRig& rig) {
    const auto& io = output_->io;
    std::vector<float> probs(static_cast<std::size_t>(ir::elementCount(io.dims)));
    const kernels::UserBufferView view{io.bufferName, io.dtype, io.userLayout, io.dims};
    kernels::deviceToUser(io.deviceFormat, rig.buffer(io.bufferName), view, std::as_writable_bytes(std::span(probs)));
    return probs;
  }

  std::vector<float> hostReference(std::vector<float> input) {
    auto program = kernels::HostProgram::build(graph_, [&](std::string_view name) { return weights_->find(name); });
    std::vector<float> probs(static_cast<std::size_t>(ir::elementCount(output_->io.dims)));
    kernels::TensorView in{ir::DType::Float, input_->io.dims, input.data(), input.size() * sizeof(float)};
    kernels::TensorView out{ir::DType::Float, output_->io.dims, probs.data(), probs.size() * sizeof(float)};
    program->run(std::span(&in, 1), std::span(&out, 1));
    return probs;
  }

  void expectMatches(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    float sum = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-4f) << "probs[" << i << "]";
      sum += got[i];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-4f) << "softmax output does not sum to 1";
  }

  std::unique_ptr<container::QpcImage> image_;
  std::vector<std::byte> qpcBytes_;
  const container::QpcBuffer* input_ = nullptr;
  const container::QpcBuffer* output_ = nullptr;
  ir::Graph graph_;
  std::unique_ptr<ir::WeightsFile> weights_;
};

uint32_t loadAndActivate(const DeviceNode& node, std::span<const std::byte> qpc, int eventfd) {
  if (auto r = loadProgram(node, qpc, 1); !r) throw std::runtime_error(r.message());
  auto dbc = activate(node, 1, 0, 64, eventfd);
  if (!dbc) throw std::runtime_error(dbc.message());
  return *dbc;
}

TEST_F(SmallCnn, ExecuteBoMatchesTheHostExecutor) {
  auto node = openNode();
  const uint32_t dbc = loadAndActivate(node, qpcBytes_, 0);
  InferenceRig rig(node, *image_, 0, dbc);
  rig.attachAll();
  rig.writeRequestDescriptor(1);
  const auto input = writeInput(rig);
  ASSERT_TRUE(node.execute(dbc, rig.executeEntries()));
  auto done = node.waitBo(rig.lastHandle(), dbc, 60000);
  ASSERT_TRUE(done) << done.message();
  EXPECT_EQ(rig.responseHeader().status, DBC_COMPLETION_SUCCESS);
  expectMatches(readOutput(rig), hostReference(input));
}

TEST_F(SmallCnn, RingAndEventfdMatchTheHostExecutor) {
  auto node = openNode();
  auto interrupt = CompletionEvent::create();
  ASSERT_TRUE(interrupt);
  const uint32_t dbc = loadAndActivate(node, qpcBytes_, interrupt->fd());
  auto window = DbcWindow::map(node, dbc);
  ASSERT_TRUE(window) << window.message();
  InferenceRig rig(node, *image_, 0, dbc);
  rig.attachAll();
  rig.writeRequestDescriptor(1);
  const auto input = writeInput(rig);
  ASSERT_TRUE(window->submit(rig.ringElements(1)));
  const ResponseElement response = awaitOneResponse(*this, *window, *interrupt, 60s);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(response.reqId, 1u);
  EXPECT_EQ(response.completionCode, DBC_COMPLETION_SUCCESS) << completionCodeName(response.completionCode);
  expectMatches(readOutput(rig), hostReference(input));
}

}  // namespace
}  // namespace qaic::emu::test
