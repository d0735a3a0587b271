// A private temporary directory for one test, removed with everything in it.
#pragma once

#include <filesystem>
#include <string>

namespace qaic::driver::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Creates parent directories and writes `text` to `relative`.
  void writeFile(const std::filesystem::path& relative, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

}  // namespace qaic::driver::test
