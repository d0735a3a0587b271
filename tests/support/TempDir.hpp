// SPDX-License-Identifier: Apache-2.0
// A private temporary directory (mkdtemp under $TMPDIR or /tmp, mode 0700), removed with
// everything in it when destroyed, after detaching a mount a failed test may have left on it.
// Also the small file and polling helpers every suite needs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace qaic::testing {

class TempDir {
 public:
  // `prefix` names the directory: <tmp>/<prefix>-XXXXXX. Throws std::runtime_error.
  explicit TempDir(const std::string& prefix = "qaic-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::filesystem::path& relative) const { return path_ / relative; }
  // Lets other users reach what is inside (a cross-user test); throws on failure.
  void setMode(mode_t mode) const;
  // Creates parent directories and writes `text` to `relative`; returns the full path.
  std::filesystem::path writeFile(const std::filesystem::path& relative, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

// The whole file, or "" when it cannot be read.
std::string readFile(const std::filesystem::path& path);

// Polls `condition` every `period` until it holds or `timeout` passes; its last value.
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                std::chrono::milliseconds period = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(period);
  }
  return condition();
}

}  // namespace qaic::testing
