// The fixture of every runtime integration test: a real qaic-emu on a private root (the test
// support's EmulatorProcess), QAIC_ROOT pointing at it, small networks compiled with the
// real qaic-exec, and the host executor (kernels::HostProgram) computing expected outputs.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <qaic/qaic.hpp>

#include "EmulatorProcess.hpp"
#include "NetworkIr.hpp"
#include "TempDir.hpp"

namespace qaic::rt::test {

// A compiled network: its IR (for the host executor) and its programqpc.bin directory.
struct Network {
  std::filesystem::path irPath;
  std::filesystem::path qpcDir;
  std::shared_ptr<Qpc> qpc;
};

class RuntimeTest : public ::testing::Test {
 protected:
  // The emulator's JSON configuration (docs/emulator.md); empty means the default device.
  virtual std::string emulatorConfig() const { return {}; }
  // More qaic-emu arguments (e.g. --trace-requests).
  virtual std::vector<std::string> emulatorArguments() const { return {}; }

  void SetUp() override;
  void TearDown() override;

  // Writes `irJson` to a file, compiles it with qaic-exec (extra options appended) and loads it.
  Network compile(const std::string& name, const std::string& irJson, const std::vector<std::string>& options = {});
  // Compiles an IR file that already exists (with its weights side file) in place.
  Network compileFile(const std::string& name, const std::filesystem::path& irPath,
                      const std::vector<std::string>& options = {});
  std::shared_ptr<Context> makeContext(LogCallback log = nullptr, ErrorHandler errors = nullptr,
                                       void* errorUserData = nullptr);
  // Outputs of the host executor for `inputs` (float tensors, io order), each resized to what the
  // executor produced.
  std::vector<std::vector<float>> expected(const Network& network, const std::vector<std::vector<float>>& inputs,
                                           const std::vector<std::vector<int64_t>>& inputDims = {});
  void writeSysfs(const std::string& attribute, const std::string& value);

  std::unique_ptr<testing::EmulatorProcess> emulator_;
  testing::TempDir work_{"qaic-runtime-test"};
  // The test's context, if it makes one; TearDown releases it (the runtime closes its device
  // file) before the emulator stops.
  std::shared_ptr<Context> context_;
};

// The two simple networks every test file uses (tests/support/NetworkIr.hpp).
using testing::addNetworkIr;
using testing::reluNetworkIr;

// Heap QBuffer over a vector's bytes.
template <typename T>
QBuffer heapBuffer(std::vector<T>& data) {
  QBuffer b;
  b.buf = reinterpret_cast<uint8_t*>(data.data());
  b.size = data.size() * sizeof(T);
  b.type = QBUFFER_TYPE_HEAP;
  return b;
}

}  // namespace qaic::rt::test
