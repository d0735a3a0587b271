#include "GeneratedData.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "Paths.hpp"
#include "Process.hpp"

namespace qaic::conformance {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(100);

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
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  const testing::ExitStatus status = testing::Process(argv).finish(std::max(left, std::chrono::milliseconds(0)));
  if (status.timedOut) throw std::runtime_error(argv[1] + " did not finish in time and was killed");
  if (!status.exited || status.code != 0) throw std::runtime_error(argv[1] + " failed");
}

}  // namespace

std::string buildDir() { return testing::buildDir().string(); }
std::string sourceDir() { return testing::sourceDir().string(); }

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
