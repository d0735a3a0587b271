#include "FaultRig.hpp"

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "RunTool.hpp"

namespace fs = std::filesystem;

namespace qaic::faults::test {

fs::path* LiveFaultTest::suiteDir_ = nullptr;

void LiveFaultTest::SetUpTestSuite() {
  char tmpl[] = "/tmp/qaic-faults-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  suiteDir_ = new fs::path(tmpl);
  const fs::path source = fs::path(QAIC_TEST_SOURCE_DIR) / "tests/integration/runner/data/regular.json";
  const auto r = qaic::testing::runProgram(qaic::testing::toolPath("qaic-exec"),
                                           {"-m=" + source.string(), "-aic-binary-dir=" + qpcDir().string()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
}

void LiveFaultTest::TearDownTestSuite() {
  if (suiteDir_ == nullptr) return;
  std::error_code ec;
  fs::remove_all(*suiteDir_, ec);
  delete suiteDir_;
  suiteDir_ = nullptr;
}

fs::path LiveFaultTest::qpcDir() { return *suiteDir_ / "regular"; }

void LiveFaultTest::SetUp() {
  ASSERT_NE(suiteDir_, nullptr);
  dir_ = *suiteDir_ / ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::create_directories(dir_);
  startEmulator();
}

void LiveFaultTest::TearDown() { emulator_.reset(); }

void LiveFaultTest::startEmulator() {
  emulator_.reset();
  emulator_ = std::make_unique<emu::test::EmulatorProcess>();
}

std::string LiveFaultTest::root() const { return emulator_->root().path().string(); }

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
  for (const char* attribute : {"nsp_free", "vc_free", "dram_free"})
    snapshot[attribute] = readSysfs(std::string("qaic-emu/") + attribute).value_or("<unreadable>");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(emulator_->root().sysfsPath(0), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("dbc", 0) == 0 && name.size() > 6 && name.substr(name.size() - 6) == "_state")
      snapshot[name] = readSysfs(name).value_or("<unreadable>");
  }
  return snapshot;
}

std::unique_ptr<ChildProcess> LiveFaultTest::startRunner(const std::vector<std::string>& extra, const std::string& tag) {
  std::vector<std::string> args = {"-t", qpcDir().string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<ChildProcess>(qaic::testing::toolPath("qaic-runner"), args, root(), dir_, tag);
}

::testing::AssertionResult LiveFaultTest::waitUntilActive(ChildProcess& runner) {
  const bool active = pollUntil([&] {
    const auto n = readSysfs("qaic-emu/networks_active");
    return (n && *n != "0") || runner.wait(std::chrono::milliseconds(0)).ended;
  }, std::chrono::seconds(20));
  if (runner.wait(std::chrono::milliseconds(0)).ended)
    return ::testing::AssertionFailure() << "the runner ended before the fault: " << runner.err();
  if (!active) return ::testing::AssertionFailure() << "the runner activated nothing within 20 s";
  // Activation comes before the first submission: let inferences flow before the fault.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult LiveFaultTest::newRunSucceeds(const std::string& tag) {
  auto runner = startRunner({"-n", "20", "--submit-timeout", "5000"}, tag);
  const ChildExit e = runner->wait(std::chrono::seconds(60));
  if (!e.ended) return ::testing::AssertionFailure() << "a new run did not end within 60 s";
  if (!e.exited || e.code != 0)
    return ::testing::AssertionFailure() << "a new run failed (exit " << e.code << ", signal " << e.signal
                                         << "): " << runner->err();
  if (runner->out().find("InferenceCnt 20 ") == std::string::npos)
    return ::testing::AssertionFailure() << "a new run did not report 20 inferences: " << runner->out();
  return ::testing::AssertionSuccess();
}

bool LiveFaultTest::pollUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace qaic::faults::test
