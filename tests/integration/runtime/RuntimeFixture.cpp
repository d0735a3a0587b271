#include "RuntimeFixture.hpp"

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "Process.hpp"
#include "driver/SysfsDevice.hpp"
#include "ir/Graph.hpp"
#include "ir/Weights.hpp"
#include "kernels/HostProgram.hpp"

namespace qaic::rt::test {

void RuntimeTest::SetUp() {
  testing::EmulatorOptions options;
  options.config = emulatorConfig();
  options.arguments = emulatorArguments();
  emulator_ = std::make_unique<testing::EmulatorProcess>(options);
  ::setenv("QAIC_ROOT", emulator_->rootPath().c_str(), 1);
}

void RuntimeTest::TearDown() {
  context_.reset();
  ::unsetenv("QAIC_ROOT");
  // How the emulator itself shuts down is the emulator suite's business; here it only has to go.
  if (emulator_ && !emulator_->stop()) std::fprintf(stderr, "note: qaic-emu had to be killed\n");
  emulator_.reset();
}

Network RuntimeTest::compile(const std::string& name, const std::string& irJson,
                             const std::vector<std::string>& options) {
  const auto irPath = work_ / (name + ".json");
  std::ofstream(irPath) << irJson;
  return compileFile(name, irPath, options);
}

Network RuntimeTest::compileFile(const std::string& name, const std::filesystem::path& irPath,
                                 const std::vector<std::string>& options) {
  Network network;
  network.irPath = irPath;
  network.qpcDir = work_ / (name + "-qpc");
  std::vector<std::string> argv = {testing::programPath("qaic-exec").string(), "-m=" + network.irPath.string(),
                                   "-aic-binary-dir=" + network.qpcDir.string()};
  argv.insert(argv.end(), options.begin(), options.end());
  const std::string log = (work_ / (name + "-exec.log")).string();
  const auto status = testing::runProgram(argv, log, std::chrono::seconds(60));
  if (!status.exited || status.code != 0) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    throw std::runtime_error("qaic-exec failed on " + name + ": " + text.str());
  }
  network.qpc = Qpc::Factory(network.qpcDir.string());
  return network;
}

std::shared_ptr<Context> RuntimeTest::makeContext(LogCallback log, ErrorHandler errors, void* errorUserData) {
  QAicContextProperties properties;
  properties.initialLogLevel = QL_ERROR;
  return Context::Factory(&properties, {}, log, nullptr, errors, errorUserData);
}

std::vector<std::vector<float>> RuntimeTest::expected(const Network& network,
                                                      const std::vector<std::vector<float>>& inputs,
                                                      const std::vector<std::vector<int64_t>>& inputDims) {
  ir::Graph graph = ir::loadGraph(network.irPath.string());
  ir::inferShapes(graph);
  std::unique_ptr<ir::WeightsFile> weights;
  if (!graph.weightsFile.empty())
    weights = ir::WeightsFile::open((network.irPath.parent_path() / graph.weightsFile).string());
  auto program = kernels::HostProgram::build(graph, [&](std::string_view tensor) -> const ir::WeightTensor* {
    return weights ? weights->find(tensor) : nullptr;
  });
  std::vector<kernels::TensorView> ins;
  std::vector<std::vector<float>> inCopies = inputs;
  std::size_t next = 0;
  for (const auto& io : graph.io) {
    if (io.direction != ir::Direction::In) continue;
    const ir::Dims dims = next < inputDims.size() && !inputDims[next].empty() ? inputDims[next] : io.dims;
    ins.push_back({ir::DType::Float, dims, inCopies[next].data(), inCopies[next].size() * sizeof(float)});
    ++next;
  }
  std::vector<std::vector<float>> outs;
  std::vector<kernels::TensorView> outViews;
  for (const auto& io : graph.io) {
    if (io.direction != ir::Direction::Out) continue;
    outs.emplace_back(static_cast<std::size_t>(ir::elementCount(io.dims)));
  }
  std::size_t o = 0;
  for (const auto& io : graph.io) {
    if (io.direction != ir::Direction::Out) continue;
    outViews.push_back({ir::DType::Float, io.dims, outs[o].data(), outs[o].size() * sizeof(float)});
    ++o;
  }
  program->run(ins, outViews);
  for (std::size_t i = 0; i < outs.size(); ++i)
    outs[i].resize(static_cast<std::size_t>(ir::elementCount(outViews[i].dims)));
  return outs;
}

void RuntimeTest::writeSysfs(const std::string& attribute, const std::string& value) {
  driver::SysfsDevice device(emulator_->root(), 0);
  auto rc = device.write(attribute, value);
  ASSERT_TRUE(rc.ok()) << attribute << ": " << rc.message();
}

shInferenceHandle acquireWith(InferenceSet& set, const std::vector<QBuffer>& buffers) {
  shInferenceHandle h;
  if (set.getAvailable(h, 1'000'000) != QS_SUCCESS) throw std::runtime_error("no free handle within 1 s");
  h->setBuffers(buffers);
  return h;
}

shInferenceHandle submitAndWait(InferenceSet& set, const shInferenceHandle& h, uint64_t id) {
  set.submit(h, id);
  shInferenceHandle done;
  const QStatus status = set.getCompletedId(done, id, 20'000'000);
  if (status != QS_SUCCESS)
    throw std::runtime_error("inference " + std::to_string(id) + ": " + statusName(status) + " " +
                             (done ? done->getErrorMessage() : std::string("(no completion)")));
  return done;
}

void inferOnce(InferenceSet& set, const std::vector<QBuffer>& buffers, uint64_t id) {
  set.putCompleted(submitAndWait(set, acquireWith(set, buffers), id));
}

QStatus statusOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.status();
  }
  return QS_SUCCESS;
}

::testing::AssertionResult refused(const std::function<void()>& call, QStatus status, const std::string& mention) {
  try {
    call();
  } catch (const Error& e) {
    if (e.status() != status)
      return ::testing::AssertionFailure()
             << "refused with " << statusName(e.status()) << ", not " << statusName(status) << ": " << e.what();
    if (std::string(e.what()).find(mention) == std::string::npos)
      return ::testing::AssertionFailure() << "the message does not mention " << mention << ": " << e.what();
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "accepted; expected " << statusName(status);
}

}  // namespace qaic::rt::test
