#include "GeneratedData.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace qaic::conformance {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(100);

std::string envOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// Holds an flock for its lifetime; acquisition polls so that it can give up at a deadline.
class FileLock {
 public:
  FileLock(const std::string& path, Clock::time_point deadline) {
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot open lock file " + path);
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (Clock::now() >= deadline) {
        ::close(fd_);
        throw std::runtime_error("timed out waiting for lock " + path);
      }
      std::this_thread::sleep_for(kPoll);
    }
  }
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

void runWithTimeout(const std::vector<std::string>& argv, Clock::time_point deadline) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + argv[0]);
  }
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) throw std::runtime_error("waitpid failed for " + argv[1]);
    if (Clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      throw std::runtime_error(argv[1] + " did not finish in time and was killed");
    }
    std::this_thread::sleep_for(kPoll);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error(argv[1] + " failed");
}

}  // namespace

std::string buildDir() { return envOr("QAIC_BUILD_DIR", QAIC_DEFAULT_BUILD_DIR); }
std::string sourceDir() { return envOr("QAIC_SOURCE_DIR", QAIC_DEFAULT_SOURCE_DIR); }

void ensureGenerated(const std::string& script, const std::string& outDir, const std::string& stamp,
                     std::chrono::seconds timeout, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(outDir) / stamp)) return;
  const auto deadline = Clock::now() + timeout;
  fs::create_directories(fs::path(outDir).parent_path());
  FileLock lock(outDir + ".lock", deadline);
  if (fs::exists(fs::path(outDir) / stamp)) return;  // another process generated it meanwhile
  std::vector<std::string> argv = {"/usr/bin/python3", sourceDir() + "/scripts/" + script, outDir};
  argv.insert(argv.end(), args.begin(), args.end());
  runWithTimeout(argv, deadline);
  if (!fs::exists(fs::path(outDir) / stamp)) throw std::runtime_error(script + " did not write " + stamp);
}

}  // namespace qaic::conformance
