// SPDX-License-Identifier: Apache-2.0
#include "RuntimeFixture.hpp"

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "CompileProgram.hpp"
#include "DeviceAttributes.hpp"
#include "HostReference.hpp"
#include "Process.hpp"

namespace qaic::rt::test {

void RuntimeTest::SetUp() {
  QaicdFixture::SetUp();
  if (HasFatalFailure()) return;
  ::setenv("QAIC_ROOT", rootPath().c_str(), 1);
}

void RuntimeTest::TearDown() {
  context_.reset();
  ::unsetenv("QAIC_ROOT");
  QaicdFixture::TearDown();
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
  testing::compileProgram(network.irPath, network.qpcDir, options);
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
  return testing::hostReferenceOutputs(network.irPath, inputs, inputDims);
}

void RuntimeTest::writeSysfs(const std::string& attribute, const std::string& value) {
  driver::SysfsDevice device(emu_->root(), 0);
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
