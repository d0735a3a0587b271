#include "EmuProcess.hpp"

#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace qaic::emu::test {
namespace {

using namespace std::chrono_literals;

int waitExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(10ms);
  }
}

pid_t spawn(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

TempDir::TempDir(const std::string& prefix) {
  std::string templ = "/tmp/" + prefix + ".XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  // A test that failed half-way may leave a mount; detach it so the directory can go.
  umount2(path_.c_str(), MNT_DETACH);
  rmdir(path_.c_str());
}

std::string emulatorBinary() {
  const char* dir = std::getenv("QAIC_BUILD_DIR");
  return std::string(dir ? dir : ".") + "/bin/qaic-emu";
}

int runToExit(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  pid_t pid = spawn(argv);
  return pid < 0 ? -1 : waitExit(pid, timeout);
}

bool waitForPath(const std::string& path, std::chrono::milliseconds timeout) {
  return eventually([&] {
    struct stat st;
    return stat(path.c_str(), &st) == 0;
  }, timeout);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

EmuProcess::EmuProcess(const std::string& root, std::vector<std::string> extra) : root_(root) {
  std::vector<std::string> argv = {emulatorBinary(), "--root", root, "--foreground"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  pid_ = spawn(argv);
  ready_ = pid_ > 0 && eventually([&] {
    struct stat st;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;  // exited: not ready
    }
    return stat(devPath(0).c_str(), &st) == 0;
  }, 20s) && pid_ > 0;
}

EmuProcess::~EmuProcess() { stop(); }

int EmuProcess::stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int rc = waitExit(pid_, 20s);
  pid_ = -1;
  return rc;
}

void EmuProcess::kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string EmuProcess::sysPath(int device, const std::string& attribute) const {
  return root_ + "/sys/class/accel/accel" + std::to_string(device) + "/" + attribute;
}

std::string EmuProcess::devPath(int device) const {
  return root_ + "/dev/accel/accel" + std::to_string(device);
}

std::string EmuProcess::readAttribute(int device, const std::string& attribute) const {
  std::string s = readFile(sysPath(device, attribute));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool EmuProcess::writeAttribute(int device, const std::string& attribute,
                                const std::string& value) const {
  std::ofstream out(sysPath(device, attribute));
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace qaic::emu::test
