// SPDX-License-Identifier: Apache-2.0
// The fixture of every runtime integration test: the test support's emulator + qaicd fixture
// (QaicdFixture, qaicd off unless a test asks for it), QAIC_ROOT pointing at the emulator, small
// networks compiled with the real qaic-exec, and the host executor computing expected outputs
// (tests/support HostReference).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <qaic/qaic.hpp>

#include "EmulatorProcess.hpp"
#include "HostBuffers.hpp"
#include "NetworkIr.hpp"
#include "QaicdFixture.hpp"
#include "TempDir.hpp"

namespace qaic::rt::test {

// A compiled network: its IR (for the host executor) and its programqpc.bin directory.
struct Network {
  std::filesystem::path irPath;
  std::filesystem::path qpcDir;
  std::shared_ptr<Qpc> qpc;
};

class RuntimeTest : public testing::QaicdFixture {
 protected:
  // The emulator's JSON configuration (docs/emulator.md); empty means the default device.
  std::string emulatorConfig() const override { return {}; }
  bool qaicdAtSetUp() const override { return false; }

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

  // The test's context, if it makes one; TearDown releases it (the runtime closes its device
  // file) before the emulator stops.
  std::shared_ptr<Context> context_;
};

// The two simple networks every test file uses (tests/support/NetworkIr.hpp).
using testing::addNetworkIr;
using testing::reluNetworkIr;

using testing::heapBuffer;
using testing::MemfdBuffer;

// A free handle of `set` with `buffers` set; throws (failing the test) when none comes in 1 s.
shInferenceHandle acquireWith(InferenceSet& set, const std::vector<QBuffer>& buffers);
// Submits `h` as `id` and returns it completed; throws (failing the test, with the handle's
// error message) unless it succeeded within 20 s.
shInferenceHandle submitAndWait(InferenceSet& set, const shInferenceHandle& h, uint64_t id);
// One inference over `buffers` as `id`: acquireWith, submitAndWait, putCompleted.
void inferOnce(InferenceSet& set, const std::vector<QBuffer>& buffers, uint64_t id);

// The status of the qaic::rt::Error that `call` throws; QS_SUCCESS when it throws none.
QStatus statusOf(const std::function<void()>& call);
// Whether `call` throws a qaic::rt::Error with `status` and a message that contains `mention`
// (e.g. the buffer's name): EXPECT_TRUE(refused([&] { set->submit(h, 1); }, QS_INVAL, "'b'")).
::testing::AssertionResult refused(const std::function<void()>& call, QStatus status, const std::string& mention = {});

}  // namespace qaic::rt::test
