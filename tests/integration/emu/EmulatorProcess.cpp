#include "EmulatorProcess.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "Subprocess.hpp"
#include "driver/SysfsDevice.hpp"

namespace qaic::emu::test {

using namespace std::chrono_literals;

namespace {

constexpr auto kStartTimeout = 30s;
constexpr auto kStopTimeout = 5s;

std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::filesystem::path buildDir() {
  const char* build = std::getenv("QAIC_BUILD_DIR");
  return build != nullptr && *build != '\0' ? build : QAIC_DEFAULT_BUILD_DIR;
}

std::filesystem::path sourceDir() {
  const char* source = std::getenv("QAIC_SOURCE_DIR");
  return source != nullptr && *source != '\0' ? source : QAIC_DEFAULT_SOURCE_DIR;
}

std::filesystem::path EmulatorProcess::binary() { return buildDir() / "bin" / "qaic-emu"; }

EmulatorProcess::EmulatorProcess(const std::string& configJson) {
  std::string pattern = (std::filesystem::temp_directory_path() / "qaic-uapi-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
  work_ = pattern;
  // Other uids must reach the mount, or a permission test would pass on the directory alone.
  ::chmod(work_.c_str(), 0755);
  root_ = work_ / "root";
  std::filesystem::create_directory(root_);
  std::vector<std::string> argv = {binary().string(), "--root", root_.string(), "--daemon"};
  if (!configJson.empty()) {
    std::ofstream(work_ / "config.json") << configJson;
    argv.insert(argv.end(), {"--config", (work_ / "config.json").string()});
  }
  const ExitStatus launcher = runProgram(argv, (work_ / "emu.log").string(), kStartTimeout);
  running_ = true;  // from here on the destructor must clean up whatever did start
  auto fail = [&](const std::string& why) {
    const std::string text = why + "\n--- qaic-emu log ---\n" + log();
    stop();
    std::filesystem::remove_all(work_);
    throw std::runtime_error(text);
  };
  if (!launcher.exited || launcher.code != 0)
    fail("qaic-emu --daemon did not exit 0 (code " + std::to_string(launcher.code) +
         (launcher.timedOut ? ", timed out)" : ")"));
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  driver::SysfsDevice device(root(), 0);
  for (;;) {
    auto pid = device.readU64("qaic-emu/pid");
    if (pid && std::filesystem::exists(root().nodePath(0))) {
      pid_ = static_cast<pid_t>(*pid);
      struct stat st {};
      if (::stat(root_.c_str(), &st) == 0) fuseDevice_ = st.st_dev;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline)
      fail("no accel0 with qaic-emu/pid under " + root_.string());
    std::this_thread::sleep_for(20ms);
  }
}

EmulatorProcess::~EmulatorProcess() {
  stop();
  std::error_code ec;
  if (!mounted()) std::filesystem::remove_all(work_, ec);
}

std::string EmulatorProcess::log() const { return readAll(work_ / "emu.log"); }

bool EmulatorProcess::mounted() const {
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  const std::string needle = " " + root_.string() + " ";
  while (std::getline(mounts, line))
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

void EmulatorProcess::unmount() const {
  runProgram({"/usr/bin/fusermount3", "-u", "-z", root_.string()}, (work_ / "emu.log").string(),
             kStopTimeout);
}

void EmulatorProcess::abortConnection() const {
  // A FUSE daemon blocked on its own mount sits in uninterruptible sleep where even SIGKILL
  // cannot reach it; aborting its connection (fusectl) fails the blocked request instead.
  if (fuseDevice_ == 0) return;
  const auto abort = std::filesystem::path("/sys/fs/fuse/connections") /
                     std::to_string(minor(fuseDevice_)) / "abort";
  std::ofstream(abort) << "1";
}

bool EmulatorProcess::stop() {
  if (!running_) return true;
  running_ = false;
  bool clean = true;
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    if (!waitForExit(pid_, kStopTimeout)) {
      clean = false;
      abortConnection();
      ::kill(pid_, SIGKILL);
      waitForExit(pid_, kStopTimeout);
    }
  }
  if (mounted()) {  // a daemon that exits cleanly unmounts its root itself
    clean = false;
    unmount();
  }
  return clean;
}

}  // namespace qaic::emu::test
