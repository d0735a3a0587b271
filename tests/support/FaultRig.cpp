// SPDX-License-Identifier: Apache-2.0
#include "FaultRig.hpp"

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "CompileProgram.hpp"
#include "Process.hpp"
#include "driver/SysfsNames.hpp"

namespace fs = std::filesystem;

namespace qaic::faults::test {

testing::TempDir* LiveFaultTest::suiteDir_ = nullptr;

void LiveFaultTest::SetUpTestSuite() {
  suiteDir_ = new testing::TempDir("qaic-faults-suite");
  const fs::path source = testing::sourceDir() / "tests/integration/qaic-runner/data/regular.json";
  const auto r = testing::runCompiler(source, qpcDir());
  ASSERT_EQ(r.exitCode, 0) << r.err;
}

void LiveFaultTest::TearDownTestSuite() {
  delete suiteDir_;
  suiteDir_ = nullptr;
}

fs::path LiveFaultTest::qpcDir() { return *suiteDir_ / "regular"; }

void LiveFaultTest::SetUp() {
  ASSERT_NE(suiteDir_, nullptr);
  startEmulator();
}

void LiveFaultTest::TearDown() { emulator_.reset(); }

void LiveFaultTest::startEmulator() {
  emulator_.reset();
  emulator_ = std::make_unique<testing::EmulatorProcess>();
}

std::string LiveFaultTest::root() const { return emulator_->rootPath().string(); }

std::optional<std::string> LiveFaultTest::readSysfs(const std::string& attribute) const {
  std::ifstream in(emulator_->root().sysfsPath(0) / attribute);
  std::string value;
  if (!in || !std::getline(in, value)) return std::nullopt;
  while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.pop_back();
  return value;
}

void LiveFaultTest::writeSysfs(const std::string& attribute, const std::string& value) const {
  std::ofstream out(emulator_->root().sysfsPath(0) / attribute);
  out << value;
  out.flush();
  ASSERT_TRUE(out.good()) << "cannot write '" << value << "' to " << attribute;
}

ResourceSnapshot LiveFaultTest::resources() const {
  ResourceSnapshot snapshot;
  for (const char* attribute : {driver::sysfs::kEmuNspFree, driver::sysfs::kEmuVcFree, driver::sysfs::kEmuDramFree})
    snapshot[attribute] = readSysfs(attribute).value_or("<unreadable>");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(emulator_->root().sysfsPath(0), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("dbc", 0) == 0 && name.size() > 6 && name.substr(name.size() - 6) == "_state")
      snapshot[name] = readSysfs(name).value_or("<unreadable>");
  }
  return snapshot;
}

std::unique_ptr<Process> LiveFaultTest::startRunner(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {testing::programPath("qaic-runner").string(), "-t", qpcDir().string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  testing::ProcessOptions options;
  options.captureStdout = options.captureStderr = true;
  options.environment = {"QAIC_ROOT=" + root()};
  return std::make_unique<Process>(argv, options);
}

::testing::AssertionResult LiveFaultTest::waitUntilActive(Process& runner) {
  const bool active = testing::eventually(
      [&] {
        const auto n = readSysfs(driver::sysfs::kEmuNetworksActive);
        return (n && *n != "0") || runner.wait(std::chrono::milliseconds(0)).ended;
      },
      std::chrono::seconds(20));
  if (runner.wait(std::chrono::milliseconds(0)).ended)
    return ::testing::AssertionFailure() << "the runner ended before the fault: " << runner.errorOutput();
  if (!active) return ::testing::AssertionFailure() << "the runner activated nothing within 20 s";
  // Activation comes before the first submission: let inferences flow before the fault.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult LiveFaultTest::newRunSucceeds() {
  auto runner = startRunner({"-n", "20", "--submit-timeout", "5000"});
  const ExitStatus e = runner->wait(std::chrono::seconds(60));
  if (!e.ended) return ::testing::AssertionFailure() << "a new run did not end within 60 s";
  if (!e.exited || e.code != 0)
    return ::testing::AssertionFailure() << "a new run failed (exit " << e.code << ", signal " << e.signal
                                         << "): " << runner->errorOutput();
  if (runner->output().find("InferenceCnt 20 ") == std::string::npos)
    return ::testing::AssertionFailure() << "a new run did not report 20 inferences: " << runner->output();
  return ::testing::AssertionSuccess();
}

}  // namespace qaic::faults::test
