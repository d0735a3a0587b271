// SPDX-License-Identifier: Apache-2.0
#include "EmulatorProcess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "Paths.hpp"
#include "base/UniqueFd.hpp"
#include "driver/DeviceProtocol.hpp"
#include "driver/SysfsDevice.hpp"
#include "driver/SysfsNames.hpp"

namespace qaic::testing {

using namespace std::chrono_literals;

namespace {
constexpr auto kStartTimeout = 30s;
constexpr auto kStopTimeout = 5s;
}  // namespace

std::filesystem::path EmulatorProcess::binary() { return programPath("qaic-emu"); }

EmulatorProcess::EmulatorProcess(const std::string& config) : EmulatorProcess(EmulatorOptions{config, {}, {}, false}) {}

EmulatorProcess::EmulatorProcess(const EmulatorOptions& options) {
  // Other uids must reach the mount, or a permission test would pass on the directory alone.
  work_.setMode(0755);
  root_ = options.root;  // may be a stale mount the emulator is to recover
  if (root_.empty()) std::filesystem::create_directory(root_ = work_ / "root");
  std::vector<std::string> argv = {binary().string(), "--root", root_.string(),
                                   options.foreground ? "--foreground" : "--daemon"};
  if (!options.config.empty())
    argv.insert(argv.end(), {"--config", work_.writeFile("config.json", options.config).string()});
  argv.insert(argv.end(), options.arguments.begin(), options.arguments.end());
  running_ = true;  // from here on the destructor must clean up whatever did start
  auto fail = [&](const std::string& why) {
    const std::string text = why + "\n--- qaic-emu log ---\n" + log();
    stop();
    throw std::runtime_error(text);
  };
  if (options.foreground) {
    ProcessOptions io;
    io.stdoutFile = work_ / "emu.log";
    io.stderrToStdout = true;
    child_.emplace(argv, io);
  } else if (const ExitStatus launcher = runProgram(argv, work_ / "emu.log", kStartTimeout);
             !launcher.exited || launcher.code != 0) {
    fail("qaic-emu --daemon did not exit 0 (exit status " + std::to_string(launcher.shellCode()) +
         (launcher.timedOut ? ", timed out)" : ")"));
  }
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  driver::SysfsDevice device(root(), 0);
  for (;;) {
    auto pid = device.readU64(driver::sysfs::kEmuPid);
    if (pid && std::filesystem::exists(nodePath(0))) {
      pid_ = static_cast<pid_t>(*pid);
      struct stat st {};
      if (::stat(root_.c_str(), &st) == 0) fuseDevice_ = st.st_dev;
      break;
    }
    if (child_ && child_->wait(0ms).ended) fail("qaic-emu exited before its tree was visible");
    if (std::chrono::steady_clock::now() > deadline)
      fail("no accel0 with " + std::string(driver::sysfs::kEmuPid) + " under " + root_.string());
    std::this_thread::sleep_for(20ms);
  }
}

EmulatorProcess::~EmulatorProcess() { stop(); }

std::string EmulatorProcess::log() const { return readFile(work_ / "emu.log"); }

std::filesystem::path EmulatorProcess::nodePath(unsigned device) const { return root().nodePath(device); }

std::filesystem::path EmulatorProcess::attributePath(unsigned device, const std::string& name) const {
  return root_ / "sys/class/accel" / ("accel" + std::to_string(device)) / name;
}

std::string EmulatorProcess::attribute(unsigned device, const std::string& name) const {
  std::string text = readFile(attributePath(device, name));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool EmulatorProcess::setAttribute(unsigned device, const std::string& name, const std::string& value) const {
  std::ofstream out(attributePath(device, name));
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

bool EmulatorProcess::removeDevice(unsigned device) const {
  return setAttribute(device, driver::sysfs::kFaultRemove, "1");
}

bool EmulatorProcess::mounted() const {
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  const std::string needle = " " + root_.string() + " ";
  while (std::getline(mounts, line))
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

void EmulatorProcess::abortConnection() const {
  // A FUSE daemon blocked on its own mount sits in uninterruptible sleep where even SIGKILL
  // cannot reach it; aborting its connection (fusectl) fails the blocked request instead.
  if (fuseDevice_ == 0) return;
  const auto abort = std::filesystem::path("/sys/fs/fuse/connections") / std::to_string(minor(fuseDevice_)) / "abort";
  std::ofstream(abort) << "1";
}

void EmulatorProcess::kill() {
  if (!running_) return;
  running_ = false;
  crashed_ = true;
  if (child_) {
    child_->signal(SIGKILL);
    child_->wait(kStopTimeout);
  } else if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitForExit(pid_, kStopTimeout);
  }
}

bool EmulatorProcess::stop() {
  bool clean = true;
  if (running_) {
    running_ = false;
    const pid_t target = child_ ? child_->pid() : pid_;
    if (target > 0) {
      ::kill(target, SIGTERM);
      const bool ended = child_ ? child_->wait(kStopTimeout).ended : waitForExit(target, kStopTimeout);
      if (!ended) {
        clean = false;
        abortConnection();
        ::kill(target, SIGKILL);
        if (child_)
          child_->wait(kStopTimeout);
        else
          waitForExit(target, kStopTimeout);
      } else if (child_) {
        const ExitStatus status = child_->wait(0ms);
        clean = status.exited && status.code == 0;
      }
    }
  }
  if (!crashed_ && mounted()) {  // a daemon that exits cleanly unmounts its root itself
    clean = false;
    runProgram({"/usr/bin/fusermount3", "-u", "-z", root_.string()}, work_ / "emu.log", kStopTimeout);
  }
  return clean;
}

int liveBoRanges(const std::filesystem::path& shmDir) {
  int ranges = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(shmDir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(driver::kDeviceMemoryFilePrefix, 0) != 0) continue;
    UniqueFd file(::open(it->path().c_str(), O_RDONLY | O_CLOEXEC));
    if (!file) continue;
    for (off_t at = ::lseek(file.get(), 0, SEEK_DATA); at >= 0; at = ::lseek(file.get(), at, SEEK_DATA)) {
      ++ranges;
      at = ::lseek(file.get(), at, SEEK_HOLE);
      if (at < 0) break;
    }
  }
  return ranges;
}

}  // namespace qaic::testing
