// SPDX-License-Identifier: Apache-2.0
#include "GeneratedData.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
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

// FNV-1a of the script's bytes: generated data records the script that made it, so that an
// edited model or generator is regenerated rather than read stale from the build tree.
std::string scriptDigest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (auto it = std::istreambuf_iterator<char>(in); it != std::istreambuf_iterator<char>(); ++it)
    hash = (hash ^ static_cast<unsigned char>(*it)) * 0x100000001b3ull;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

bool generatedBy(const std::filesystem::path& stamp, const std::string& digest) {
  std::ifstream in(stamp.string() + ".script");
  std::string recorded;
  return std::filesystem::exists(stamp) && in >> recorded && recorded == digest;
}

}  // namespace

std::string buildDir() { return testing::buildDir().string(); }
std::string sourceDir() { return testing::sourceDir().string(); }

void ensureGenerated(const std::string& script, const std::string& outDir, const std::string& stamp,
                     std::chrono::seconds timeout, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  const std::string scriptPath = sourceDir() + "/scripts/" + script;
  const std::string digest = scriptDigest(scriptPath);
  const fs::path stampPath = fs::path(outDir) / stamp;
  if (generatedBy(stampPath, digest)) return;
  const auto deadline = Clock::now() + timeout;
  fs::create_directories(fs::path(outDir).parent_path());
  FileLock lock(outDir + ".lock", deadline);
  if (generatedBy(stampPath, digest)) return;  // another process generated it meanwhile
  std::vector<std::string> argv = {"/usr/bin/python3", scriptPath, outDir};
  argv.insert(argv.end(), args.begin(), args.end());
  runWithTimeout(argv, deadline);
  if (!fs::exists(stampPath)) throw std::runtime_error(script + " did not write " + stamp);
  std::ofstream(stampPath.string() + ".script") << digest << "\n";
}

}  // namespace qaic::conformance
